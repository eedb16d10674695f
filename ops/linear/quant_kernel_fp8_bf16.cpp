// fp8 (e4m3) weight-only with bf16 activations on AVX512_BF16 and VBMI (flags in CMakeLists.txt).
// Every e4m3 value is an exact bf16 number, so a channel's sum_k x_k w_k is a bf16 dot product
// (vdpbf16ps) and its scale multiplies the fp32 sum at the end. 64 codes become bf16 with two
// vpermi2b (their 7 magnitude bits index 128-entry tables of the bf16 value's high and low
// bytes; subnormals included), one vpternlog (the sign into the high byte) and two unpacks,
// whose byte order the pack's runs of 64 match (quant_kernel.hpp, fp8_runs). The fp32 kernel it
// replaces decoded 16 codes with four uops and read at half the memory's speed at M = 1 (the
// Emerald Rapids VM, 2026-11-28).
// GCC 12's _mm512_reduce_add_ps reads an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>

#include "ops/linear/quant_kernel.hpp"

namespace opmeter::linear {
namespace {

// The bf16 bits of e4m3 magnitude i (7 bits: exponent 4, mantissa 3, bias 7); 127 is NaN.
constexpr std::uint16_t e4m3_magnitude_bf16(unsigned i) {
  const unsigned e = i >> 3, m = i & 7;
  if (i == 127) return 0x7fc0;
  if (e > 0) return static_cast<std::uint16_t>(((e - 7 + 127) << 7) | (m << 4));
  if (m == 0) return 0;
  unsigned p = 0;  // a subnormal, m 2^-9: m = 2^p (1 + f)
  while ((2u << p) <= m) ++p;
  return static_cast<std::uint16_t>(((p - 9 + 127) << 7) | ((m - (1u << p)) << (7 - p)));
}

struct ByteTables {
  alignas(64) std::array<std::uint8_t, 128> high{}, low{};
};
constexpr ByteTables kTables = [] {
  ByteTables t;
  for (unsigned i = 0; i < 128; ++i) {
    t.high[i] = static_cast<std::uint8_t>(e4m3_magnitude_bf16(i) >> 8);
    t.low[i] = static_cast<std::uint8_t>(e4m3_magnitude_bf16(i) & 0xff);
  }
  return t;
}();

// R rows times channels j .. j + C - 1: c[r * ldc + j + i].
template <std::size_t R, std::size_t C>
void channels(const PackedWeights& w, std::size_t j, const std::uint16_t* x, float* c, std::size_t ldc) {
  const std::size_t h = w.hidden, full = h / 64 * 64;
  const __m512i high0 = _mm512_load_si512(kTables.high.data()), high1 = _mm512_load_si512(kTables.high.data() + 64);
  const __m512i low0 = _mm512_load_si512(kTables.low.data()), low1 = _mm512_load_si512(kTables.low.data() + 64);
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  const std::uint8_t* codes[C];
  for (std::size_t i = 0; i < C; ++i) codes[i] = w.codes.data() + (j + i) * h;
  __m512 acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < C; ++i) acc[r][i] = _mm512_setzero_ps();
  // The next C channels' rows are fetched as these are read (of the layer: a thread's next range
  // usually follows its own). Short rows end before the hardware prefetcher has ramped up on them;
  // long ones gained too (the Emerald Rapids VM, 2026-11-28: docs/BENCHMARKS.md).
  const std::size_t next = j + C < w.out ? std::min(C, w.out - j - C) : 0;
  for (std::size_t k = 0; k < full; k += 64) {
    for (std::size_t i = 0; i < next; ++i)
      _mm_prefetch(reinterpret_cast<const char*>(codes[0] + (C + i) * h + k), _MM_HINT_T0);
    __m512bh xlo[R], xhi[R];
    for (std::size_t r = 0; r < R; ++r) {
      xlo[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + r * h + k));
      xhi[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + r * h + k + 32));
    }
    for (std::size_t i = 0; i < C; ++i) {
      const __m512i b = _mm512_loadu_si512(codes[i] + k);
      // (high | (b & 0x80)): the code's sign is bf16's.
      const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(high0, b, high1), b, sign, 0xf8);
      const __m512i lo = _mm512_permutex2var_epi8(low0, b, low1);
      const __m512bh first = reinterpret_cast<__m512bh>(_mm512_unpacklo_epi8(lo, hi));   // k .. k + 31
      const __m512bh second = reinterpret_cast<__m512bh>(_mm512_unpackhi_epi8(lo, hi));  // k + 32 .. k + 63
      for (std::size_t r = 0; r < R; ++r)
        acc[r][i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc[r][i], xlo[r], first), xhi[r], second);
    }
  }
  for (std::size_t i = 0; i < C; ++i)
    for (std::size_t r = 0; r < R; ++r) {
      float tail = 0;  // k past the last run of 64: canonical order
      for (std::size_t k = full; k < h; ++k) tail += bf16_bits_value(x[r * h + k]) * e4m3_value(codes[i][k]);
      c[r * ldc + j + i] = (_mm512_reduce_add_ps(acc[r][i]) + tail) * w.scales[j + i];
    }
}

template <std::size_t R>
void rows_pass(const PackedWeights& w, const std::uint16_t* x, std::size_t j0, std::size_t j1, float* c,
               std::size_t ldc) {
  constexpr std::size_t C = kBf16ChannelsPerPass<R>;
  std::size_t j = j0;
  for (; j + C <= j1; j += C) channels<R, C>(w, j, x, c, ldc);
  for (; j < j1; ++j) channels<R, 1>(w, j, x, c, ldc);
}

}  // namespace

void avx512bf16_fp8(const PackedWeights& w, const std::uint16_t* xb, std::size_t rows, std::size_t j0, std::size_t j1,
                    float* c, std::size_t ldc) {
  using Fn = void (*)(const PackedWeights&, const std::uint16_t*, std::size_t, std::size_t, float*, std::size_t);
  static constexpr Fn by_rows[kRowsPerPass] = {rows_pass<1>, rows_pass<2>, rows_pass<3>, rows_pass<4>,
                                               rows_pass<5>, rows_pass<6>, rows_pass<7>, rows_pass<8>};
  // Eight channels at a time through every row pass: their codes stay in L1/L2 between passes.
  for (std::size_t jb = j0; jb < j1; jb += 8) {
    const std::size_t je = std::min(j1, jb + 8);
    for (std::size_t m = 0; m < rows; m += kRowsPerPass) {
      const std::size_t n = std::min(kRowsPerPass, rows - m);
      by_rows[n - 1](w, xb + m * w.hidden, jb, je, c + m * ldc, ldc);
    }
  }
}

}  // namespace opmeter::linear
