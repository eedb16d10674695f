// AVX-512 peak kernels (this file is compiled with -mavx512f -mavx512bf16 -mavx512vnni).
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "ops/peak/peak.hpp"

namespace opmeter::peak {
namespace {

double fp32(std::int64_t iters) {
  const __m512 a = _mm512_set1_ps(kFmaA), b = _mm512_set1_ps(kFmaB);
  __m512 acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(chain_start(j));
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  }
  double sum = 0;
  for (int j = 0; j < kChains; ++j) sum += _mm512_reduce_add_ps(acc[j]);
  return sum;
}

double fp64(std::int64_t iters) {
  const __m512d a = _mm512_set1_pd(kFmaA), b = _mm512_set1_pd(kFmaB);
  __m512d acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_pd(chain_start(j));
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_pd(acc[j], a, b);
  }
  double sum = 0;
  for (int j = 0; j < kChains; ++j) sum += _mm512_reduce_add_pd(acc[j]);
  return sum;
}

double bf16(std::int64_t iters) {
  // Each lane adds 1.0 * 2^-10 twice per iteration (a pair of bf16 products).
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3a80);
  __m512 acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(chain_start(j));
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  }
  double sum = 0;
  for (int j = 0; j < kChains; ++j) sum += _mm512_reduce_add_ps(acc[j]);
  return sum;
}

double int8(std::int64_t iters) {
  // Each lane adds four products 1 * 1 per iteration.
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  __m512i acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_epi32(j);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  }
  double sum = 0;
  for (int j = 0; j < kChains; ++j) sum += _mm512_reduce_add_epi32(acc[j]);
  return sum;
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
