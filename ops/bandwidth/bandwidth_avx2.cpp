// AVX2 bandwidth kernels (compiled with -mavx2): 32-byte loads and stores, so that an AVX2 CPU's
// cache levels are not read at the 16 bytes a load of the SSE2 baseline.
#include <immintrin.h>

#include "ops/bandwidth/bandwidth.hpp"

namespace opmeter::bandwidth {
constexpr std::size_t kVecBytes = 32;
#define NT_STORE_INTRINSIC(p, v) _mm256_stream_ps(p, (__m256)v)
#include "ops/bandwidth/bandwidth_kernels.inc"
#undef NT_STORE_INTRINSIC

Kernels avx2_kernels() { return {"avx2", copy_k, scale_k, add_k, triad_k, read_k, write_k}; }
}  // namespace opmeter::bandwidth
