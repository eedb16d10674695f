// Baseline bandwidth kernels (16-byte vectors: SSE2, present on every x86-64).
#include <immintrin.h>

#include "ops/bandwidth/bandwidth.hpp"

namespace opmeter::bandwidth {
constexpr std::size_t kVecBytes = 16;
#define NT_STORE_INTRINSIC(p, v) _mm_stream_ps(p, (__m128)v)
#include "ops/bandwidth/bandwidth_kernels.inc"
#undef NT_STORE_INTRINSIC

Kernels base_kernels() { return {"sse2", copy_k, scale_k, add_k, triad_k, read_k, write_k}; }
}  // namespace opmeter::bandwidth
