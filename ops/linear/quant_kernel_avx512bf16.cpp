// int4 weight-only with bf16 activations on AVX512_BF16 (flags in CMakeLists.txt).
// A code q in 0..15 is an exact bf16 number, so a group's sum_k x_k q_k is a bf16 dot product:
// per 32 weights one broadcast 16-byte load, a zero-extension to 32 words (each q_lo | q_hi << 4,
// twice), a variable shift (the upper 16 words by 4), one vpermw through a 32-entry table
// (entry i = bf16(i & 15): the low nibble needs no mask) and one vdpbf16ps per row. The group's
// scale multiplies the fp32 partial sum; its zero point's term -z s sum(x) comes from the rows'
// group sums. Several channels go per pass, so that each x chunk is loaded once for all of them
// and their independent accumulators hide vdpbf16ps's latency at M = 1.
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>

#include "ops/linear/quant_kernel.hpp"

namespace opmeter::linear {
namespace {

// bf16 bits of the integer n in 0..15 (n = 2^e (1 + m / 2^e)).
constexpr std::uint16_t small_int_bf16(unsigned n) {
  if (n == 0) return 0;
  unsigned e = 0;
  while ((2u << e) <= n) ++e;
  return static_cast<std::uint16_t>(((127 + e) << 7) | ((n - (1u << e)) << (7 - e)));
}

constexpr std::array<std::uint16_t, 32> kCodeTable = [] {
  std::array<std::uint16_t, 32> t{};
  for (unsigned i = 0; i < 32; ++i) t[i] = small_int_bf16(i & 15);
  return t;
}();


// R rows times channels j .. j + C - 1: c[r * ldc + j + i].
template <std::size_t R, std::size_t C>
void channels(const PackedWeights& w, std::size_t j, const std::uint16_t* x, const float* xsum, float* c, std::size_t ldc) {
  const std::size_t h = w.hidden, groups = h / w.group, width = w.bf16_group_params ? 2 : 4;
  const __m512i table = _mm512_loadu_si512(kCodeTable.data());
  const __m512i shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  const std::uint8_t* codes[C];
  const std::uint8_t* scales[C];
  const std::uint8_t* zeros[C];
  for (std::size_t i = 0; i < C; ++i) {
    codes[i] = w.codes.data() + (j + i) * h / 2;
    scales[i] = w.group_scales.data() + (j + i) * groups * width;
    zeros[i] = w.group_zeros.data() + (j + i) * groups * width;
  }
  __m512 acc[R][C];
  float zero_term[R][C] = {};
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < C; ++i) acc[r][i] = _mm512_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    __m512 part[R][C];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t i = 0; i < C; ++i) part[r][i] = _mm512_setzero_ps();
    for (std::size_t k = g * w.group, end = k + w.group; k < end; k += 32) {
      __m512bh xv[R];
      for (std::size_t r = 0; r < R; ++r) xv[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + r * h + k));
      for (std::size_t i = 0; i < C; ++i) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes[i] + k / 2));
        const __m512i words = _mm512_srlv_epi16(_mm512_cvtepu8_epi16(_mm256_broadcastsi128_si256(bytes)), shifts);
        const __m512bh q = reinterpret_cast<__m512bh>(_mm512_permutexvar_epi16(words, table));
        for (std::size_t r = 0; r < R; ++r) part[r][i] = _mm512_dpbf16_ps(part[r][i], xv[r], q);
      }
    }
    for (std::size_t i = 0; i < C; ++i) {
      const float s = group_param(scales[i], g, w.bf16_group_params);
      const float zs = group_param(zeros[i], g, w.bf16_group_params) * s;
      const __m512 vs = _mm512_set1_ps(s);
      for (std::size_t r = 0; r < R; ++r) {
        acc[r][i] = _mm512_fmadd_ps(part[r][i], vs, acc[r][i]);
        zero_term[r][i] += zs * xsum[r * groups + g];
      }
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < C; ++i) c[r * ldc + j + i] = _mm512_reduce_add_ps(acc[r][i]) - zero_term[r][i];
}

// Channels per pass for R rows: about 8 accumulators in flight, within 32 registers.
template <std::size_t R>
constexpr std::size_t kChannelsPerPass = R == 1 ? 8 : R == 2 ? 4 : R <= 4 ? 2 : 1;

template <std::size_t R>
void rows_pass(const PackedWeights& w, const std::uint16_t* x, const float* xsum, std::size_t j0, std::size_t j1, float* c,
               std::size_t ldc) {
  constexpr std::size_t C = kChannelsPerPass<R>;
  std::size_t j = j0;
  for (; j + C <= j1; j += C) channels<R, C>(w, j, x, xsum, c, ldc);
  for (; j < j1; ++j) channels<R, 1>(w, j, x, xsum, c, ldc);
}

}  // namespace

void avx512bf16_int4(const PackedWeights& w, const std::uint16_t* xb, const float* xsum, std::size_t rows, std::size_t j0,
                     std::size_t j1, float* c, std::size_t ldc) {
  using Fn = void (*)(const PackedWeights&, const std::uint16_t*, const float*, std::size_t, std::size_t, float*, std::size_t);
  static constexpr Fn by_rows[kRowsPerPass] = {rows_pass<1>, rows_pass<2>, rows_pass<3>, rows_pass<4>,
                                               rows_pass<5>, rows_pass<6>, rows_pass<7>, rows_pass<8>};
  const std::size_t groups = w.hidden / w.group;
  // Eight channels at a time through every row pass: their codes stay in L1/L2 between passes.
  for (std::size_t jb = j0; jb < j1; jb += 8) {
    const std::size_t je = std::min(j1, jb + 8);
    for (std::size_t m = 0; m < rows; m += kRowsPerPass) {
      const std::size_t n = std::min(kRowsPerPass, rows - m);
      by_rows[n - 1](w, xb + m * w.hidden, xsum + m * groups, jb, je, c + m * ldc, ldc);
    }
  }
}

}  // namespace opmeter::linear
