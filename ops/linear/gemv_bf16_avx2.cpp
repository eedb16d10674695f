// The bf16 GEMV with AVX2 and FMA (flags in CMakeLists.txt), for CPUs without AVX512_BF16. A
// 32-byte load of W holds 16 bf16 weights, two per 32-bit lane: the odd one is the lane with its
// low half cleared and the even one the lane shifted left 16, both exact fp32, so a load costs two
// integer operations and then one FMA per row and half. x is made fp32 once per call in the same
// order (per 16 values: the 8 even ones, then the 8 odd ones) by gemv_bf16_x_for_avx2, once per
// layer call; sums in fp32, as on AVX512_BF16.
#include <immintrin.h>

#include <algorithm>

#include "opmeter/dtype.hpp"
#include "ops/linear/gemv_bf16.hpp"

namespace opmeter::linear {
namespace {

constexpr std::size_t kPrefetchedHidden = 4096;

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// R rows of x (in the order above, row stride hidden) times C channels from j: c[r * ldc + j + i];
// with `prefetch`, the next C channels' rows are fetched as these are read.
template <std::size_t R, std::size_t C>
void channels(const float* xp, const std::uint16_t* xb, const std::uint16_t* w, std::size_t hidden, std::size_t j,
              float* c, std::size_t ldc, bool prefetch = false) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const std::size_t full = hidden / 16 * 16;
  __m256 acc[R][C];
  for (auto& row : acc)
    for (auto& a : row) a = _mm256_setzero_ps();
  for (std::size_t k = 0; k < full; k += 16) {
    if (prefetch && k % 32 == 0)
      for (std::size_t i = 0; i < C; ++i)
        _mm_prefetch(reinterpret_cast<const char*>(w + (j + C + i) * hidden + k), _MM_HINT_T0);
    __m256 even[C], odd[C];
    for (std::size_t i = 0; i < C; ++i) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + (j + i) * hidden + k));
      even[i] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
      odd[i] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
    }
    for (std::size_t r = 0; r < R; ++r) {
      const __m256 xe = _mm256_loadu_ps(xp + r * hidden + k), xo = _mm256_loadu_ps(xp + r * hidden + k + 8);
      for (std::size_t i = 0; i < C; ++i)
        acc[r][i] = _mm256_fmadd_ps(odd[i], xo, _mm256_fmadd_ps(even[i], xe, acc[r][i]));
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < C; ++i) {
      float tail = 0;
      for (std::size_t k = full; k < hidden; ++k)
        tail += from_bf16(xb[r * hidden + k]) * from_bf16(w[(j + i) * hidden + k]);
      c[r * ldc + j + i] = hsum(acc[r][i]) + tail;
    }
}

template <std::size_t R>
void rows_pass(const float* xp, const std::uint16_t* xb, const std::uint16_t* w, std::size_t hidden, std::size_t j0,
               std::size_t j1, float* c, std::size_t ldc) {
  // Short rows (a few KB) end before the hardware prefetcher has ramped up on them: each block of
  // four channels fetches the next, a line per channel, as it is read. Long rows need no help.
  const bool short_rows = hidden <= kPrefetchedHidden;
  std::size_t j = j0;
  for (; j + 4 <= j1; j += 4) channels<R, 4>(xp, xb, w, hidden, j, c, ldc, short_rows && j + 8 <= j1);
  for (; j < j1; ++j) channels<R, 1>(xp, xb, w, hidden, j, c, ldc);
}

}  // namespace

void gemv_bf16_avx2(const std::uint16_t* x, const float* xp, std::size_t rows, const std::uint16_t* w,
                    std::size_t hidden, std::size_t j0, std::size_t j1, float* c, std::size_t ldc) {
  for (std::size_t m = 0; m < rows; m += 4) {
    const float* xm = xp + m * hidden;
    const std::uint16_t* xbm = x + m * hidden;
    float* cm = c + m * ldc;
    switch (std::min<std::size_t>(4, rows - m)) {
      case 1: rows_pass<1>(xm, xbm, w, hidden, j0, j1, cm, ldc); break;
      case 2: rows_pass<2>(xm, xbm, w, hidden, j0, j1, cm, ldc); break;
      case 3: rows_pass<3>(xm, xbm, w, hidden, j0, j1, cm, ldc); break;
      default: rows_pass<4>(xm, xbm, w, hidden, j0, j1, cm, ldc); break;
    }
  }
}

}  // namespace opmeter::linear
