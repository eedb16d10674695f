// The quantized linear kernels with AVX-512 (F, BW, VL, VNNI; flags in CMakeLists.txt).
// Weight-only: 32 weights per step are decoded into two fp32 vectors (int4: one 16-byte load,
// the two nibbles, each paired with its run of x in quant_kernel.hpp's block layout; int8 and
// e4m3: sign-extended bytes) and each of the pass's rows accumulates them with FMAs; a channel's
// codes are read from memory once, whatever the row count (passes after the first find them in
// L1). int8 dynamic: vpdpbusd of u8 activations (code + 128) and s8 weights, the shift taken
// back with the channel's code sum.
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/linear/quant_kernel.hpp"

namespace opmeter::linear {
namespace {
using quant::WeightFormat;

// Weights k .. k + 31 of an int8 or e4m3 channel as fp32 (e4m3 without its scale: see e4m3_value).
template <WeightFormat F>
inline void decode32(const std::uint8_t* p, __m512& lo, __m512& hi) {
  const __m512i a = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i b = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
  if constexpr (F == WeightFormat::int8) {
    lo = _mm512_cvtepi32_ps(a);
    hi = _mm512_cvtepi32_ps(b);
  } else {
    // Sign-extended, shifted left 20: the sign lands on bit 31, the magnitude under fp32's exponent.
    const __m512i mask = _mm512_set1_epi32(static_cast<int>(0x87f00000u));
    const __m512 two120 = _mm512_set1_ps(0x1p120f);
    lo = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(a, 20), mask)), two120);
    hi = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(b, 20), mask)), two120);
  }
}

inline float scalar_weight(const PackedWeights& w, const std::uint8_t* codes, std::size_t k) {
  return w.format == WeightFormat::fp8 ? e4m3_value(codes[k]) : float(static_cast<std::int8_t>(codes[k]));
}

// R rows (x, row stride hidden) times channel j: c[r * ldc + j].
template <WeightFormat F, std::size_t R>
void channel(const PackedWeights& w, std::size_t j, const float* x, const float* xsum, float* c, std::size_t ldc) {
  const std::size_t h = w.hidden;
  if constexpr (F == WeightFormat::int4) {
    // Per group: s * (sum_k q_k x_k) - z s * sum_k x_k; the codes need no dequantizing FMA.
    const std::uint8_t* codes = w.codes.data() + j * h / 2;
    const __m512i nibble = _mm512_set1_epi32(0xf);
    const std::size_t groups = h / w.group;
    const std::uint8_t* scales = w.group_scales.data() + j * groups * (w.bf16_group_params ? 2 : 4);
    const std::uint8_t* zeros = w.group_zeros.data() + j * groups * (w.bf16_group_params ? 2 : 4);
    auto param = [bf16 = w.bf16_group_params](const std::uint8_t* p, std::size_t g) { return group_param(p, g, bf16); };
    __m512 acc[R];
    float zero_term[R] = {};
    for (std::size_t r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (std::size_t g = 0; g < groups; ++g) {
      __m512 part[R][2];
      for (std::size_t r = 0; r < R; ++r) part[r][0] = part[r][1] = _mm512_setzero_ps();
      // 16 bytes at offset o of a block at k: low nibbles are x[k + o ..], high ones x[k + B/2 + o ..].
      const std::size_t half = w.block / 2;
      for (std::size_t k = g * w.group, end = k + w.group; k < end; k += w.block)
        for (std::size_t o = 0; o < half; o += 16) {
          const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + k / 2 + o)));
          const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, nibble));
          const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
          for (std::size_t r = 0; r < R; ++r) {
            part[r][0] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(x + r * h + k + o), part[r][0]);
            part[r][1] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + r * h + k + half + o), part[r][1]);
          }
        }
      const float s = param(scales, g), zs = param(zeros, g) * s;
      const __m512 vs = _mm512_set1_ps(s);
      for (std::size_t r = 0; r < R; ++r) {
        acc[r] = _mm512_fmadd_ps(_mm512_add_ps(part[r][0], part[r][1]), vs, acc[r]);
        zero_term[r] += zs * xsum[r * groups + g];
      }
    }
    for (std::size_t r = 0; r < R; ++r) c[r * ldc + j] = _mm512_reduce_add_ps(acc[r]) - zero_term[r];
  } else {
    __m512 acc[R][2];
    for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    float tail[R] = {};
    const std::uint8_t* codes = w.codes.data() + j * h;
    const std::size_t full = h / 32 * 32;
    for (std::size_t k = 0; k < full; k += 32) {
      __m512 lo, hi;
      decode32<F>(codes + k, lo, hi);
      for (std::size_t r = 0; r < R; ++r) {
        acc[r][0] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(x + r * h + k), acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + r * h + k + 16), acc[r][1]);
      }
    }
    for (std::size_t k = full; k < h; ++k) {
      const float wk = scalar_weight(w, codes, k);
      for (std::size_t r = 0; r < R; ++r) tail[r] += x[r * h + k] * wk;
    }
    for (std::size_t r = 0; r < R; ++r)
      c[r * ldc + j] = (_mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1])) + tail[r]) * w.scales[j];
  }
}

template <WeightFormat F>
void channels(const PackedWeights& w, const float* x, const float* xsum, std::size_t rows, std::size_t j0, std::size_t j1,
              float* c, std::size_t ldc) {
  using Fn = void (*)(const PackedWeights&, std::size_t, const float*, const float*, float*, std::size_t);
  const std::size_t groups = F == WeightFormat::int4 ? w.hidden / w.group : 0;
  static constexpr Fn by_rows[kRowsPerPass] = {channel<F, 1>, channel<F, 2>, channel<F, 3>, channel<F, 4>,
                                               channel<F, 5>, channel<F, 6>, channel<F, 7>, channel<F, 8>};
  for (std::size_t j = j0; j < j1; ++j)
    for (std::size_t m = 0; m < rows; m += kRowsPerPass) {
      const std::size_t n = std::min(kRowsPerPass, rows - m);
      by_rows[n - 1](w, j, x + m * w.hidden, xsum + m * groups, c + m * ldc, ldc);
    }
}

void weight_only(const PackedWeights& w, const float* x, const float* xsum, std::size_t rows, std::size_t j0, std::size_t j1,
                 float* c, std::size_t ldc) {
  switch (w.format) {
    case WeightFormat::int4:
      // Tiles are packed for int4_bf16 only: this path reads them through the plain C++ kernel.
      if (w.tiles) return base_quant_kernels().weight_only(w, x, xsum, rows, j0, j1, c, ldc);
      return channels<WeightFormat::int4>(w, x, xsum, rows, j0, j1, c, ldc);
    case WeightFormat::fp8: return channels<WeightFormat::fp8>(w, x, xsum, rows, j0, j1, c, ldc);
    default: return channels<WeightFormat::int8>(w, x, xsum, rows, j0, j1, c, ldc);
  }
}

template <std::size_t R>
void int8_channel(const PackedWeights& w, std::size_t j, const std::uint8_t* xu, const float* xscale, float* c,
                  std::size_t ldc) {
  const std::size_t h = w.hidden;
  const std::uint8_t* codes = w.codes.data() + j * h;
  __m512i acc[R];
  for (std::size_t r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
  for (std::size_t k = 0; k < h; k += 64) {
    // The tail's missing bytes read as zero in both operands: no products.
    const __mmask64 m = h - k >= 64 ? ~__mmask64{0} : (__mmask64{1} << (h - k)) - 1;
    const __m512i wv = _mm512_maskz_loadu_epi8(m, codes + k);
    for (std::size_t r = 0; r < R; ++r)
      acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_maskz_loadu_epi8(m, xu + r * h + k), wv);
  }
  const std::int32_t shift = 128 * w.code_sums[j];
  for (std::size_t r = 0; r < R; ++r)
    c[r * ldc + j] = float(_mm512_reduce_add_epi32(acc[r]) - shift) * xscale[r] * w.scales[j];
}

void int8_dynamic(const PackedWeights& w, const std::uint8_t* xu, const float* xscale, std::size_t rows, std::size_t j0,
                  std::size_t j1, float* c, std::size_t ldc) {
  using Fn = void (*)(const PackedWeights&, std::size_t, const std::uint8_t*, const float*, float*, std::size_t);
  static constexpr Fn by_rows[kRowsPerPass] = {int8_channel<1>, int8_channel<2>, int8_channel<3>, int8_channel<4>,
                                               int8_channel<5>, int8_channel<6>, int8_channel<7>, int8_channel<8>};
  for (std::size_t j = j0; j < j1; ++j)
    for (std::size_t m = 0; m < rows; m += kRowsPerPass) {
      const std::size_t n = std::min(kRowsPerPass, rows - m);
      by_rows[n - 1](w, j, xu + m * w.hidden, xscale + m, c + m * ldc, ldc);
    }
}

}  // namespace

QuantKernels avx512_quant_kernels() { return {"avx512", weight_only, int8_dynamic, nullptr}; }

}  // namespace opmeter::linear
