// AVX2 + FMA peak kernels (this file is compiled with -mavx2 -mfma -mavxvnni).
#include <immintrin.h>

#include <cstring>

#include "ops/peak/peak_chains.hpp"

namespace opmeter::peak {
namespace {

template <class T, int N, class V>
double lane_sum(V v) {
  alignas(32) T t[N];
  std::memcpy(t, &v, sizeof(v));
  double s = 0;
  for (T x : t) s += x;
  return s;
}

double fp32(std::int64_t iters) {
  const __m256 a = _mm256_set1_ps(kFmaA), b = _mm256_set1_ps(kFmaB);
  return run_chains<__m256>(
      iters, [](int j) { return _mm256_set1_ps(chain_start(j)); }, [&](__m256 c) { return _mm256_fmadd_ps(c, a, b); },
      lane_sum<float, 8, __m256>);
}

double fp64(std::int64_t iters) {
  const __m256d a = _mm256_set1_pd(kFmaA), b = _mm256_set1_pd(kFmaB);
  return run_chains<__m256d>(
      iters, [](int j) { return _mm256_set1_pd(chain_start(j)); }, [&](__m256d c) { return _mm256_fmadd_pd(c, a, b); },
      lane_sum<double, 4, __m256d>);
}

double int8(std::int64_t iters) {
  const __m256i ones = _mm256_set1_epi8(1);
  return run_chains<__m256i>(
      iters, [](int j) { return _mm256_set1_epi32(j); }, [&](__m256i c) { return _mm256_dpbusd_avx_epi32(c, ones, ones); },
      lane_sum<std::int32_t, 8, __m256i>);
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
