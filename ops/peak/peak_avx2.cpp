// AVX2 + FMA peak kernels (this file is compiled with -mavx2 -mfma -mavxvnni).
#include <immintrin.h>

#include "ops/peak/peak.hpp"

namespace opmeter::peak {
namespace {

template <class V, class Set, class Fma, class Sum>
double fma_chains(std::int64_t iters, Set set1, Fma fma, Sum sum_lanes) {
  const V a = set1(kFmaA), b = set1(kFmaB);
  V acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = set1(chain_start(j));
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = fma(acc[j], a, b);
  }
  double sum = 0;
  for (int j = 0; j < kChains; ++j) sum += sum_lanes(acc[j]);
  return sum;
}

double fp32(std::int64_t iters) {
  return fma_chains<__m256>(
      iters, [](float x) { return _mm256_set1_ps(x); }, [](__m256 c, __m256 a, __m256 b) { return _mm256_fmadd_ps(c, a, b); },
      [](__m256 v) {
        alignas(32) float t[8];
        _mm256_store_ps(t, v);
        double s = 0;
        for (float x : t) s += x;
        return s;
      });
}

double fp64(std::int64_t iters) {
  return fma_chains<__m256d>(
      iters, [](float x) { return _mm256_set1_pd(x); }, [](__m256d c, __m256d a, __m256d b) { return _mm256_fmadd_pd(c, a, b); },
      [](__m256d v) {
        alignas(32) double t[4];
        _mm256_store_pd(t, v);
        return t[0] + t[1] + t[2] + t[3];
      });
}

double int8(std::int64_t iters) {
  const __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(1);
  __m256i acc[kChains];
#pragma GCC unroll 12
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_epi32(j);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_dpbusd_avx_epi32(acc[j], a, b);
  }
  double sum = 0;
  for (int j = 0; j < kChains; ++j) {
    alignas(32) std::int32_t t[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), acc[j]);
    for (auto x : t) sum += x;
  }
  return sum;
}

}  // namespace

std::optional<Kernel> avx2_kernel(DType d) {
  switch (d) {
    case DType::fp32: return Kernel{"avx2_fma", kChains * 8 * 2.0, fp32, [](std::int64_t n) { return fma_expected(n, 8); }};
    case DType::fp64: return Kernel{"avx2_fma", kChains * 4 * 2.0, fp64, [](std::int64_t n) { return fma_expected(n, 4); }};
    case DType::int8: return Kernel{"avx_vnni", kChains * 8 * 8.0, int8, [](std::int64_t n) { return dot_int8_expected(n, 8); }};
    default: return std::nullopt;
  }
}

}  // namespace opmeter::peak
