// AVX-512 peak kernels (this file is compiled with -mavx512f -mavx512bf16 -mavx512vnni).
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "ops/peak/peak_chains.hpp"

namespace opmeter::peak {
namespace {

double fp32(std::int64_t iters) {
  const __m512 a = _mm512_set1_ps(kFmaA), b = _mm512_set1_ps(kFmaB);
  return run_chains<__m512>(
      iters, [](int j) { return _mm512_set1_ps(chain_start(j)); }, [&](__m512 c) { return _mm512_fmadd_ps(c, a, b); },
      [](__m512 v) { return static_cast<double>(_mm512_reduce_add_ps(v)); });
}

double fp64(std::int64_t iters) {
  const __m512d a = _mm512_set1_pd(kFmaA), b = _mm512_set1_pd(kFmaB);
  return run_chains<__m512d>(
      iters, [](int j) { return _mm512_set1_pd(chain_start(j)); }, [&](__m512d c) { return _mm512_fmadd_pd(c, a, b); },
      [](__m512d v) { return _mm512_reduce_add_pd(v); });
}

double bf16(std::int64_t iters) {
  // Each lane adds 1.0 * 2^-10 twice per iteration (a pair of bf16 products).
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3a80);
  return run_chains<__m512>(
      iters, [](int j) { return _mm512_set1_ps(chain_start(j)); }, [&](__m512 c) { return _mm512_dpbf16_ps(c, a, b); },
      [](__m512 v) { return static_cast<double>(_mm512_reduce_add_ps(v)); });
}

double int8(std::int64_t iters) {
  // Each lane adds four products 1 * 1 per iteration.
  const __m512i ones = _mm512_set1_epi8(1);
  return run_chains<__m512i>(
      iters, [](int j) { return _mm512_set1_epi32(j); }, [&](__m512i c) { return _mm512_dpbusd_epi32(c, ones, ones); },
      [](__m512i v) { return static_cast<double>(_mm512_reduce_add_epi32(v)); });
}

}  // namespace

std::optional<Kernel> avx512_kernel(DType d) {
  switch (d) {
    case DType::fp32: return Kernel{"avx512", kChains * 16 * 2.0, fp32, [](std::int64_t n) { return fma_expected(n, 16); }};
    case DType::fp64: return Kernel{"avx512", kChains * 8 * 2.0, fp64, [](std::int64_t n) { return fma_expected(n, 8); }};
    case DType::bf16: return Kernel{"avx512_bf16", kChains * 16 * 4.0, bf16, [](std::int64_t n) { return dot_bf16_expected(n, 16); }};
    case DType::int8: return Kernel{"avx512_vnni", kChains * 16 * 8.0, int8, [](std::int64_t n) { return dot_int8_expected(n, 16); }};
    default: return std::nullopt;
  }
}

}  // namespace opmeter::peak
