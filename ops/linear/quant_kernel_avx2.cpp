// The quantized linear kernels with AVX2 and FMA (flags in CMakeLists.txt), for CPUs without
// AVX-512 VNNI (AMD Zen 2 and 3, Intel before Ice Lake): the AVX-512 kernels' math on 8 lanes.
// Weight-only: 16 bytes per step are decoded into four fp32 vectors (int4: the low and high
// nibbles of two 8-byte halves, each paired with its run of x in quant_kernel.hpp's block layout;
// int8 and e4m3: 32 bytes, sign-extended), four independent FMA chains per row so that one row
// (decode) keeps both FMA pipes busy; a channel's codes are read from memory once whatever the
// row count. int8 dynamic: AVX2 has no u8 x s8 product that cannot saturate (vpmaddubsw adds its
// pairs in 16 bits), so the u8 activation codes and the channel's codes are widened to s16 as they
// are loaded: vpmaddwd, exact in s32. int4 with bf16 activations: x as the int8 limbs' 16-bit
// words against the codes widened to 16 bits (vpmaddwd), below.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "ops/linear/quant_kernel.hpp"

namespace opmeter::linear {
namespace {
using quant::WeightFormat;

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

inline std::int32_t hsum(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 1)));
}

// Weights k .. k + 7 of an int8 or e4m3 channel as fp32 (e4m3 without its scale: see e4m3_value).
template <WeightFormat F>
inline __m256 decode8(const std::uint8_t* p) {
  const __m256i a = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  if constexpr (F == WeightFormat::int8) {
    return _mm256_cvtepi32_ps(a);
  } else {
    // Sign-extended, shifted left 20: the sign lands on bit 31, the magnitude under fp32's exponent.
    const __m256i mask = _mm256_set1_epi32(static_cast<int>(0x87f00000u));
    return _mm256_mul_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(a, 20), mask)),
                         _mm256_set1_ps(0x1p120f));
  }
}

inline float scalar_weight(const PackedWeights& w, const std::uint8_t* codes, std::size_t k) {
  return w.format == WeightFormat::fp8 ? e4m3_value(codes[k]) : float(static_cast<std::int8_t>(codes[k]));
}

// R rows (x, row stride hidden) times channel j of int4 weights in blocks: c[r * ldc + j].
// Per group: s * (sum_k q_k x_k) - z s * sum_k x_k; the codes need no dequantizing FMA.
template <std::size_t R>
void int4_channel(const PackedWeights& w, std::size_t j, const float* x, const float* xsum, float* c, std::size_t ldc) {
  const std::size_t h = w.hidden, groups = h / w.group, half = w.block / 2;
  const std::uint8_t* codes = w.codes.data() + j * h / 2;
  const std::size_t width = w.bf16_group_params ? 2 : 4;
  const std::uint8_t* scales = w.group_scales.data() + j * groups * width;
  const std::uint8_t* zeros = w.group_zeros.data() + j * groups * width;
  const __m256i nibble = _mm256_set1_epi32(0xf);
  __m256 acc[R];
  float zero_term[R] = {};
  for (std::size_t r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    __m256 part[R][4];
    for (std::size_t r = 0; r < R; ++r) part[r][0] = part[r][1] = part[r][2] = part[r][3] = _mm256_setzero_ps();
    // 16 bytes at offset o of a block at k: low nibbles are x[k + o ..], high ones x[k + B/2 + o ..].
    for (std::size_t k = g * w.group, end = k + w.group; k < end; k += w.block)
      for (std::size_t o = 0; o < half; o += 16) {
        const std::uint8_t* p = codes + k / 2 + o;
        const __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        const __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)));
        const __m256 lo0 = _mm256_cvtepi32_ps(_mm256_and_si256(v0, nibble));
        const __m256 hi0 = _mm256_cvtepi32_ps(_mm256_srli_epi32(v0, 4));
        const __m256 lo1 = _mm256_cvtepi32_ps(_mm256_and_si256(v1, nibble));
        const __m256 hi1 = _mm256_cvtepi32_ps(_mm256_srli_epi32(v1, 4));
        for (std::size_t r = 0; r < R; ++r) {
          const float* xr = x + r * h + k + o;
          part[r][0] = _mm256_fmadd_ps(lo0, _mm256_loadu_ps(xr), part[r][0]);
          part[r][1] = _mm256_fmadd_ps(lo1, _mm256_loadu_ps(xr + 8), part[r][1]);
          part[r][2] = _mm256_fmadd_ps(hi0, _mm256_loadu_ps(xr + half), part[r][2]);
          part[r][3] = _mm256_fmadd_ps(hi1, _mm256_loadu_ps(xr + half + 8), part[r][3]);
        }
      }
    const float s = group_param(scales, g, w.bf16_group_params), zs = group_param(zeros, g, w.bf16_group_params) * s;
    const __m256 vs = _mm256_set1_ps(s);
    for (std::size_t r = 0; r < R; ++r) {
      const __m256 sum = _mm256_add_ps(_mm256_add_ps(part[r][0], part[r][1]), _mm256_add_ps(part[r][2], part[r][3]));
      acc[r] = _mm256_fmadd_ps(sum, vs, acc[r]);
      zero_term[r] += zs * xsum[r * groups + g];
    }
  }
  for (std::size_t r = 0; r < R; ++r) c[r * ldc + j] = hsum(acc[r]) - zero_term[r];
}

// R rows times channel j of int8 or e4m3 weights (per-channel scales).
template <WeightFormat F, std::size_t R>
void byte_channel(const PackedWeights& w, std::size_t j, const float* x, const float*, float* c, std::size_t ldc) {
  const std::size_t h = w.hidden, full = h / 32 * 32;
  const std::uint8_t* codes = w.codes.data() + j * h;
  __m256 acc[R][4];
  for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = _mm256_setzero_ps();
  for (std::size_t k = 0; k < full; k += 32) {
    const __m256 w0 = decode8<F>(codes + k), w1 = decode8<F>(codes + k + 8), w2 = decode8<F>(codes + k + 16),
                 w3 = decode8<F>(codes + k + 24);
    for (std::size_t r = 0; r < R; ++r) {
      const float* xr = x + r * h + k;
      acc[r][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xr), acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xr + 8), acc[r][1]);
      acc[r][2] = _mm256_fmadd_ps(w2, _mm256_loadu_ps(xr + 16), acc[r][2]);
      acc[r][3] = _mm256_fmadd_ps(w3, _mm256_loadu_ps(xr + 24), acc[r][3]);
    }
  }
  float tail[R] = {};
  for (std::size_t k = full; k < h; ++k) {
    const float wk = scalar_weight(w, codes, k);
    for (std::size_t r = 0; r < R; ++r) tail[r] += x[r * h + k] * wk;
  }
  for (std::size_t r = 0; r < R; ++r) {
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3]));
    c[r * ldc + j] = (hsum(sum) + tail[r]) * w.scales[j];
  }
}

template <WeightFormat F, std::size_t R>
void channel(const PackedWeights& w, std::size_t j, const float* x, const float* xsum, float* c, std::size_t ldc) {
  if constexpr (F == WeightFormat::int4) int4_channel<R>(w, j, x, xsum, c, ldc);
  else byte_channel<F, R>(w, j, x, xsum, c, ldc);
}

template <WeightFormat F>
void channels(const PackedWeights& w, const float* x, const float* xsum, std::size_t rows, std::size_t j0,
              std::size_t j1, float* c, std::size_t ldc) {
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

void weight_only(const PackedWeights& w, const float* x, const float* xsum, std::size_t rows, std::size_t j0,
                 std::size_t j1, float* c, std::size_t ldc) {
  switch (w.format) {
    case WeightFormat::int4:
      // Tiles are packed for the AVX-512 tile kernels only: read them through the plain C++ kernel.
      if (w.tiles) return base_quant_kernels().weight_only(w, x, xsum, rows, j0, j1, c, ldc);
      return channels<WeightFormat::int4>(w, x, xsum, rows, j0, j1, c, ldc);
    case WeightFormat::fp8: return channels<WeightFormat::fp8>(w, x, xsum, rows, j0, j1, c, ldc);
    default: return channels<WeightFormat::int8>(w, x, xsum, rows, j0, j1, c, ldc);
  }
}

// R rows of activation codes (s16, row stride hidden) times channel j.
// R rows of u8 activation codes (code + 128, row stride hidden) times channel j: both widened to
// s16 as they are loaded (xu <= 255 and |w| <= 127: a lane pair's sum fits in s32), the shift
// taken back with the channel's code sum, as the AVX-512 kernel does.
template <std::size_t R>
void int8_channel(const PackedWeights& w, std::size_t j, const std::uint8_t* xu, const float* xscale, float* c,
                  std::size_t ldc) {
  const std::size_t h = w.hidden, full = h / 16 * 16;
  const std::uint8_t* codes = w.codes.data() + j * h;
  auto load16 = [](const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  __m256i acc[R];
  for (std::size_t r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
  for (std::size_t k = 0; k < full; k += 16) {
    const __m256i wv = _mm256_cvtepi8_epi16(load16(codes + k));
    for (std::size_t r = 0; r < R; ++r)
      acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(wv, _mm256_cvtepu8_epi16(load16(xu + r * h + k))));
  }
  const std::int32_t shift = 128 * w.code_sums[j];
  for (std::size_t r = 0; r < R; ++r) {
    std::int32_t sum = hsum(acc[r]);
    for (std::size_t k = full; k < h; ++k) sum += std::int32_t(xu[r * h + k]) * static_cast<std::int8_t>(codes[k]);
    c[r * ldc + j] = float(sum - shift) * xscale[r] * w.scales[j];
  }
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

// int4 with bf16 activations as 16-bit words (XLimbs::word = 254 hi + lo, |word| <= 32385: the
// limbs' own integers, made by split below): 16 code bytes are widened to 16 bits and split into
// their nibbles (0..15), and vpmaddwd adds each lane pair's q * word into s32. A dword holds 8
// products per block of 64 weights, at most 3.9 M: exact, and exact in fp32 for groups up to 256.
// Four multiplies per 64 weights where the two int8 limbs took six (vpmaddubsw per limb and
// nibble, vpmaddwd per limb): from the L2 on the Zen 3 VM at one thread, 16 -> 18 GB/s in groups
// of 64, 12 -> 16 in groups of 32 (BENCHMARKS, "The AVX2 int4 kernel on 16-bit words").
// Per group the dwords are scaled by s a / 254 (the channel's s / 254 in fp32 beforehand, times
// the row's a at one row), the zero points' term sum_g z s sum_g(x) from the exact sums of x.
// The block layout (quant_kernel.hpp): a block of B weights (32 or 64) at k is B / 2 bytes; its
// 16-byte chunk c holds weights k + 16 c .. in the low nibbles and k + B / 2 + 16 c .. in the high.
constexpr std::size_t kPrefetchBytes = 2048;  // how far ahead of the codes the loads ask for lines

// 16 code bytes against a row's words: the low nibbles beside x, the high ones beside x + high.
inline __m256i chunk_dot(const std::uint8_t* codes, const std::int16_t* x, std::size_t high) {
  const __m256i c = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
  const __m256i q_low = _mm256_and_si256(c, _mm256_set1_epi16(0x0f)), q_high = _mm256_srli_epi16(c, 4);
  auto load = [](const std::int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  return _mm256_add_epi32(_mm256_madd_epi16(q_low, load(x)), _mm256_madd_epi16(q_high, load(x + high)));
}

// A block of B weights at k against a row's words: 8 dwords that sum to the block's q . word.
template <std::size_t B>
inline __m256i block_dot(const std::uint8_t* codes, const std::int16_t* x, std::size_t k) {
  const __m256i first = chunk_dot(codes + k / 2, x + k, B / 2);
  if constexpr (B == 32) return first;
  else return _mm256_add_epi32(first, chunk_dot(codes + k / 2 + 16, x + k + 16, B / 2));
}

// Group g's dwords for R rows (words at x[r]), blocks of B.
template <std::size_t B, std::size_t R>
inline void group_dots(const std::uint8_t* codes, const std::int16_t* const* x, std::size_t g, std::size_t group,
                       __m256i* dot) {
  const std::size_t k0 = g * group;
  for (std::size_t r = 0; r < R; ++r) dot[r] = block_dot<B>(codes, x[r], k0);
  for (std::size_t k = k0 + B; k < k0 + group; k += B)
    for (std::size_t r = 0; r < R; ++r) dot[r] = _mm256_add_epi32(dot[r], block_dot<B>(codes, x[r], k));
}

// sum_g zs[g] xsum[g]: a row's zero-point term, 8 groups per step.
inline float zero_point_term(const float* zs, const float* xsum, std::size_t groups) {
  __m256 z = _mm256_setzero_ps();
  std::size_t g = 0;
  for (; g + 8 <= groups; g += 8) z = _mm256_fmadd_ps(_mm256_loadu_ps(zs + g), _mm256_loadu_ps(xsum + g), z);
  float sum = hsum(z);
  for (; g < groups; ++g) sum += zs[g] * xsum[g];
  return sum;
}

// R rows from r0 times channel j in blocks of B, groups of G (0: w.group, 64 and up). Folded: one
// row whose a is already in scale254. Steps of at least 64 code bytes (4 groups of 32, else 2),
// each line prefetched once, the groups into two accumulators in turn.
template <std::size_t B, std::size_t G, std::size_t R, bool Folded = false>
void words_channel(const PackedWeights& w, std::size_t j, const XLimbs& x, std::size_t r0, const float* xsum,
                   const float* scale254, const float* zs, float* c, std::size_t ldc) {
  static_assert(R == 1 || !Folded);
  const std::size_t h = w.hidden, group = G ? G : w.group, groups = h / group;
  constexpr std::size_t step = G == 32 ? 4 : 2;
  const std::uint8_t* codes = w.codes.data() + j * h / 2;
  const std::int16_t* xr[R];
  const float* a[R];
  for (std::size_t r = 0; r < R; ++r) {
    xr[r] = x.word.data() + (r0 + r) * h;
    a[r] = x.scale.data() + (r0 + r) * groups;
  }
  __m256 acc[2][R];
  for (std::size_t r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm256_setzero_ps();
  auto scale_into = [&](__m256* into, const __m256i* dot, std::size_t g) {
    const __m256 sg = _mm256_broadcast_ss(scale254 + g);
    for (std::size_t r = 0; r < R; ++r) {
      const __m256 d = _mm256_cvtepi32_ps(dot[r]);
      if constexpr (Folded) into[r] = _mm256_fmadd_ps(d, sg, into[r]);
      else into[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_broadcast_ss(a[r] + g)), sg, into[r]);
    }
  };
  std::size_t g = 0;
  for (; g + step <= groups; g += step) {
    for (std::size_t line = 0; line < step * group / 2; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(codes + g * group / 2 + line + kPrefetchBytes), _MM_HINT_T0);
    for (std::size_t s = 0; s < step; ++s) {
      __m256i d[R];
      group_dots<B, R>(codes, xr, g + s, group, d);
      scale_into(acc[s % 2], d, g + s);
    }
  }
  for (; g < groups; ++g) {
    __m256i d[R];
    group_dots<B, R>(codes, xr, g, group, d);
    scale_into(acc[0], d, g);
  }
  for (std::size_t r = 0; r < R; ++r)
    c[r * ldc + j] = hsum(_mm256_add_ps(acc[0][r], acc[1][r])) - zero_point_term(zs, xsum + r * groups, groups);
}

void int4_limbs(const PackedWeights& w, const XLimbs& x, const float* xsum, std::size_t rows, std::size_t j0,
                std::size_t j1, float* c, std::size_t ldc) {
  using Fn = void (*)(const PackedWeights&, std::size_t, const XLimbs&, std::size_t, const float*, const float*,
                      const float*, float*, std::size_t);
  static_assert(kAvx2LimbRows == 4);
  // Groups of 32 (blocks of 32), 64 (the common recipe, its group known to the compiler) or more.
  static constexpr Fn by_rows[3][kAvx2LimbRows + 1] = {
      {words_channel<32, 32, 1, true>, words_channel<32, 32, 1>, words_channel<32, 32, 2>, words_channel<32, 32, 3>,
       words_channel<32, 32, 4>},
      {words_channel<64, 64, 1, true>, words_channel<64, 64, 1>, words_channel<64, 64, 2>, words_channel<64, 64, 3>,
       words_channel<64, 64, 4>},
      {words_channel<64, 0, 1, true>, words_channel<64, 0, 1>, words_channel<64, 0, 2>, words_channel<64, 0, 3>,
       words_channel<64, 0, 4>}};
  const Fn* kernel = by_rows[w.block == 32 ? 0 : w.group == 64 ? 1 : 2];  // [0]: one row, folded
  const std::size_t groups = w.hidden / w.group, width = w.bf16_group_params ? 2 : 4;
  // A channel's s / 254 (times the row's a at one row) and z s in fp32, 8 groups per step, once
  // for all its row passes: done per group, this was a third of decode's instructions.
  float* scale254 = float_scratch(groups, 0);
  float* zs = float_scratch(groups, 1);
  const bool folded = rows == 1;
  const float* a = x.scale.data();
  const bool bf16 = w.bf16_group_params;
  auto params8 = [bf16](const std::uint8_t* p, std::size_t g) {
    if (!bf16) return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + g);
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * g));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  };
  for (std::size_t j = j0; j < j1; ++j) {
    const std::uint8_t* scales = w.group_scales.data() + j * groups * width;
    const std::uint8_t* zeros = w.group_zeros.data() + j * groups * width;
    std::size_t g = 0;
    for (; g + 8 <= groups; g += 8) {
      const __m256 sv = params8(scales, g);
      const __m256 s254 = _mm256_mul_ps(sv, _mm256_set1_ps(1.f / 254));
      _mm256_storeu_ps(scale254 + g, folded ? _mm256_mul_ps(s254, _mm256_loadu_ps(a + g)) : s254);
      _mm256_storeu_ps(zs + g, _mm256_mul_ps(params8(zeros, g), sv));
    }
    for (; g < groups; ++g) {
      const float sv = group_param(scales, g, bf16), s254 = sv * (1.f / 254);
      scale254[g] = folded ? s254 * a[g] : s254;
      zs[g] = group_param(zeros, g, bf16) * sv;
    }
    if (folded) {
      kernel[0](w, j, x, 0, xsum, scale254, zs, c, ldc);
      continue;
    }
    for (std::size_t m = 0; m < rows; m += kAvx2LimbRows) {
      const std::size_t n = std::min(kAvx2LimbRows, rows - m);
      kernel[n](w, j, x, m, xsum + m * groups, scale254, zs, c + m * ldc, ldc);
    }
  }
}

// int8 weight-only in quads (quant_kernel.hpp: per block of 16 channels, runs of 64 bytes holding
// 4 consecutive k of each channel, plus 128) against x's limbs in groups of kInt8LimbGroup. A
// 32-byte half run is 8 channels x 4 k; xor 0x80 gives the codes w, and vpmaddubsw takes |w| (u8)
// against x's 4 bytes broadcast with w's signs (vpsignb): |w| <= 127 and |x| <= 127, so a lane's
// two products add to at most 32258, no saturation (the stored u8 against s8 could reach 64770).
// vpmaddwd adds the lane pairs into each channel's dword (hi limb times 254, lo times 1); per
// group the dwords are scaled by the row's a / 254, and at the end by the channels' scales: no
// horizontal sums. L: limbs (1 where x is int8dq's activation codes, limbs_from_int8).
constexpr std::size_t kInt8Channels = 16, kInt8Rows = kAvx2Int8LimbRows;  // 2 x 4 accumulators + the codes' 4

template <std::size_t R, std::size_t L>
void int8_block_rows(const PackedWeights& w, std::size_t jb, const XLimbs& x, std::size_t m0, float* out) {
  const std::size_t h = w.hidden, groups = h / kInt8LimbGroup;
  const std::uint8_t* codes = w.codes.data() + jb * kInt8Channels * h;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), hi_unit = _mm256_set1_epi16(L == 2 ? 254 : 1),
                lo_unit = _mm256_set1_epi16(1);
  const float unit = L == 2 ? 1.f / 254 : 1.f;
  __m256 dot[R][2];
  for (auto& row : dot) row[0] = row[1] = _mm256_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    const std::uint8_t* run = codes + 1024 * g;  // 16 runs of 64 bytes: k = 64 g .. 64 g + 63
    __m256i acc[R][2];
    for (auto& row : acc) row[0] = row[1] = _mm256_setzero_si256();
    for (std::size_t u = 0; u < 16; ++u) {
      _mm_prefetch(reinterpret_cast<const char*>(run + 64 * u + kPrefetchBytes), _MM_HINT_T0);
      __m256i wv[2], aw[2];
      for (std::size_t half = 0; half < 2; ++half) {
        wv[half] =
            _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(run + 64 * u + 32 * half)), flip);
        aw[half] = _mm256_abs_epi8(wv[half]);
      }
      const std::size_t k = 64 * g + 4 * u;
      for (std::size_t m = 0; m < R; ++m) {
        std::int32_t b;
        std::memcpy(&b, x.hi.data() + (m0 + m) * h + k, 4);
        const __m256i xh = _mm256_set1_epi32(b);
        __m256i xl = xh;
        if constexpr (L == 2) {
          std::memcpy(&b, x.lo.data() + (m0 + m) * h + k, 4);
          xl = _mm256_set1_epi32(b);
        }
        for (std::size_t half = 0; half < 2; ++half) {
          __m256i t = _mm256_madd_epi16(_mm256_maddubs_epi16(aw[half], _mm256_sign_epi8(xh, wv[half])), hi_unit);
          if constexpr (L == 2)
            t = _mm256_add_epi32(
                t, _mm256_madd_epi16(_mm256_maddubs_epi16(aw[half], _mm256_sign_epi8(xl, wv[half])), lo_unit));
          acc[m][half] = _mm256_add_epi32(acc[m][half], t);
        }
      }
    }
    for (std::size_t m = 0; m < R; ++m) {
      const __m256 a = _mm256_set1_ps(x.scale[(m0 + m) * groups + g] * unit);
      for (std::size_t half = 0; half < 2; ++half)
        dot[m][half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[m][half]), a, dot[m][half]);
    }
  }
  const float* scales = w.scales.data() + jb * kInt8Channels;
  for (std::size_t m = 0; m < R; ++m)
    for (std::size_t half = 0; half < 2; ++half)
      _mm256_storeu_ps(out + m * kInt8Channels + 8 * half,
                       _mm256_mul_ps(dot[m][half], _mm256_loadu_ps(scales + 8 * half)));
}

void int8_limbs(const PackedWeights& w, const XLimbs& x, std::size_t rows, std::size_t j0, std::size_t j1, float* c,
                std::size_t ldc) {
  float out[kInt8Rows * kInt8Channels];
  for (std::size_t m0 = 0; m0 < rows; m0 += kInt8Rows) {
    const std::size_t mr = std::min(kInt8Rows, rows - m0);
    for (std::size_t jb = j0 / kInt8Channels; jb * kInt8Channels < j1; ++jb) {
      if (x.one_limb()) mr == 1 ? int8_block_rows<1, 1>(w, jb, x, m0, out) : int8_block_rows<2, 1>(w, jb, x, m0, out);
      else mr == 1 ? int8_block_rows<1, 2>(w, jb, x, m0, out) : int8_block_rows<2, 2>(w, jb, x, m0, out);
      // Only the block's channels in [j0, j1): a range may cut a block, and the last is padded.
      const std::size_t first = std::max(j0, jb * kInt8Channels), last = std::min(j1, (jb + 1) * kInt8Channels);
      for (std::size_t m = 0; m < mr; ++m)
        for (std::size_t j = first; j < last; ++j) c[(m0 + m) * ldc + j] = out[m * kInt8Channels + j % kInt8Channels];
    }
  }
}

// 16 bf16 values at p as two fp32 vectors.
inline void bf16x16(const std::uint16_t* p, __m256& a, __m256& b) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(v)), 16));
  b = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1)), 16));
}

// Two vectors of 8 int32 (each within int16's range) as 16 words in order.
inline __m256i to_words(__m256i a, __m256i b) {
  return _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);  // packs works per 128-bit lane
}

// Two vectors of 8 int32 (each within int8's range) as 16 bytes in order.
inline __m128i to_bytes(__m256i a, __m256i b) {
  const __m256i w16 = to_words(a, b);
  return _mm_packs_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
}

// split_limbs with AVX2: the AVX-512 version's math (quant_kernel_limbs.cpp), 16 values per step,
// stored as the limbs (the int8 kernel's) or as the words 254 hi + lo (the int4 kernel's).
template <bool Words>
void split_as(const std::uint16_t* xb, std::size_t row, std::size_t hidden, std::size_t group, XLimbs& x) {
  const std::size_t groups = hidden / group;
  std::int8_t* hi = Words ? nullptr : x.hi.data() + row * hidden;
  std::int8_t* lo = Words ? nullptr : x.lo.data() + row * hidden;
  std::int16_t* word = Words ? x.word.data() + row * hidden : nullptr;
  const std::uint16_t* src = xb + row * hidden;
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t k0 = g * group;
    __m256 big = _mm256_setzero_ps();
    for (std::size_t k = k0; k < k0 + group; k += 16) {
      __m256 a, b;
      bf16x16(src + k, a, b);
      big = _mm256_max_ps(big, _mm256_max_ps(_mm256_and_ps(a, magnitude), _mm256_and_ps(b, magnitude)));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(big), _mm256_extractf128_ps(big, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    const float largest = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
    // Zeros, denormals, inf or NaN: limbs 0 and the scale as it is (as split_limbs on AVX-512).
    const bool usable = largest >= 0x1p-100f && std::isfinite(largest);
    x.scale[row * groups + g] = usable ? largest / 127 : largest;
    const __m256 inv = _mm256_set1_ps(usable ? 127 / largest : 0.f), lo_unit = _mm256_set1_ps(254.f);
    __m256i hi_sum = _mm256_setzero_si256(), lo_sum = hi_sum;
    for (std::size_t k = k0; k < k0 + group; k += 16) {
      __m256 a, b;
      bf16x16(src + k, a, b);
      __m256i hv[2], lv[2];
      const __m256 vs[2] = {_mm256_mul_ps(a, inv), _mm256_mul_ps(b, inv)};  // |v| <= 127
      for (int i = 0; i < 2; ++i) {
        const __m256 hr = _mm256_round_ps(vs[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        hv[i] = _mm256_cvtps_epi32(hr);
        lv[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(vs[i], hr), lo_unit));  // |lo| <= 127
        hi_sum = _mm256_add_epi32(hi_sum, hv[i]);
        lo_sum = _mm256_add_epi32(lo_sum, lv[i]);
      }
      if constexpr (Words) {
        const __m256i unit = _mm256_set1_epi32(254);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(word + k),
                            to_words(_mm256_add_epi32(_mm256_mullo_epi32(hv[0], unit), lv[0]),
                                     _mm256_add_epi32(_mm256_mullo_epi32(hv[1], unit), lv[1])));
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(hi + k), to_bytes(hv[0], hv[1]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(lo + k), to_bytes(lv[0], lv[1]));
      }
    }
    x.hi_sum[row * groups + g] = hsum(hi_sum);
    x.lo_sum[row * groups + g] = hsum(lo_sum);
  }
}

void split(const std::uint16_t* xb, std::size_t row, std::size_t hidden, std::size_t group, XLimbs& x) {
  assert(x.form != XLimbs::Form::one_limb);  // codes come from limbs_from_int8
  x.form == XLimbs::Form::words ? split_as<true>(xb, row, hidden, group, x)
                                : split_as<false>(xb, row, hidden, group, x);
}

}  // namespace

QuantKernels avx2_quant_kernels() {
  QuantKernels k{"avx2", weight_only, int8_dynamic, nullptr};
  k.int4_limbs = int4_limbs;
  k.int4_limbs_in_tiles = false;
  k.int4_limbs_words = true;
  k.int8_limbs = int8_limbs;
  k.split = split;
  return k;
}

}  // namespace opmeter::linear
