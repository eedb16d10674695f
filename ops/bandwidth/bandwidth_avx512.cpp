// AVX-512 bandwidth kernels (compiled with -mavx512f).
#include <immintrin.h>

#include "ops/bandwidth/bandwidth.hpp"

namespace opmeter::bandwidth {
constexpr std::size_t kVecBytes = 64;
#define NT_STORE_INTRINSIC(p, v) _mm512_stream_ps(p, (__m512)v)
#include "ops/bandwidth/bandwidth_kernels.inc"
#undef NT_STORE_INTRINSIC

Kernels avx512_kernels() { return {"avx512", copy_k, scale_k, add_k, triad_k, read_k, write_k}; }
}  // namespace opmeter::bandwidth
