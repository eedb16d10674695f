// int4 weight-only with bf16 activations on AVX512_BF16 (flags in CMakeLists.txt).
// A code q in 0..15 is an exact bf16 number, so a group's sum_k x_k q_k is a bf16 dot product
// (vdpbf16ps); the group's scale multiplies the fp32 partial sum, and its zero point's term
// -z s sum(x) comes from the rows' group sums. Several channels go per pass, so that each x chunk
// is loaded once for all of them and their independent accumulators hide vdpbf16ps's latency.
//
// Blocks of 64 (groups of 64 and up): a 32-byte load, zero-extended to 32 words (vpmovzxbw),
// gives 64 codes in two vectors, one vpternlog and one gf2p8affineqb, as bf16 numbers 3 + q / 64
// (exact: see kOffset). Each product is x (3 + q / 64): the group's partial sum times 64 s, less
// s (192 + z) sum_g(x), which with the zero point's term is one dot product over the groups per
// channel at its end. The groups' scales (64 s, and s (192 + z)) are converted to fp32 once per 8
// channels, so a group costs one FMA and a broadcast load per channel: 3 decode uops (one of them
// on either port) and 2 vdpbf16ps per 32 code bytes. The previous decode (vpsrlvw + vpermw, two
// port-5 uops per 16 bytes, and the group's scalars) was port-bound at about a third of the
// memory bandwidth at M = 1.
// Blocks of 32 (group 32): per 16 bytes a broadcast, vpmovzxbw, a variable shift (the upper 16
// words by 4) and one vpermw through a 32-entry table (entry i = bf16(i & 15)).
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <vector>

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

// Blocks of 64: a code byte's word 0x00bb becomes bf16 bits 0x4040 | q (q its low or high
// nibble): exponent 2^1, mantissa 64 + q, the number 3 + q / 64, exactly. The low nibble by one
// vpternlog ((b & 15) | 0x4040, either vector port), the high one by one gf2p8affineqb (the high
// byte 0 maps to 0x40, the low one to its high nibble xor 0x40).
constexpr float kCodeScale = 64, kOffset = 3;

// Blocks of 64: R rows times channels j .. j + C - 1, the groups' fp32 scales s and zero terms
// s (128 + z) of channel j + i at params[2i] and params[2i + 1] (each `groups` long).
template <std::size_t R, std::size_t C>
void channels64(const PackedWeights& w, std::size_t j, const std::uint16_t* x, const float* xsum, float* c, std::size_t ldc,
                const float* const* params) {
  const std::size_t h = w.hidden, groups = h / w.group;
  const __m512i low4 = _mm512_set1_epi16(0xf), bits = _mm512_set1_epi16(0x4040);
  // The GF(2) affine map of each byte that moves its high nibble to bits 0..3 (then xor 0x40).
  const __m512i hi_map = _mm512_set1_epi64(0x1020408000000000ll);
  const std::uint8_t* codes[C];
  for (std::size_t i = 0; i < C; ++i) codes[i] = w.codes.data() + (j + i) * h / 2;
  __m512 acc[R][C];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < C; ++i) acc[r][i] = _mm512_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    __m512 part[R][C];
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t i = 0; i < C; ++i) part[r][i] = _mm512_setzero_ps();
    for (std::size_t k = g * w.group, end = k + w.group; k < end; k += 64) {
      __m512bh xlo[R], xhi[R];
      for (std::size_t r = 0; r < R; ++r) {
        xlo[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + r * h + k));
        xhi[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + r * h + k + 32));
      }
      for (std::size_t i = 0; i < C; ++i) {
        const __m512i b = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes[i] + k / 2)));
        const __m512bh lo = reinterpret_cast<__m512bh>(_mm512_ternarylogic_epi32(b, low4, bits, 0xea));  // (b & 15) | 0x4040
        const __m512bh hi = reinterpret_cast<__m512bh>(_mm512_gf2p8affine_epi64_epi8(b, hi_map, 0x40));
        for (std::size_t r = 0; r < R; ++r) part[r][i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(part[r][i], xlo[r], lo), xhi[r], hi);
      }
    }
    for (std::size_t i = 0; i < C; ++i) {
      const __m512 vs = _mm512_set1_ps(params[2 * i][g]);
      for (std::size_t r = 0; r < R; ++r) acc[r][i] = _mm512_fmadd_ps(part[r][i], vs, acc[r][i]);
    }
  }
  // The zero points' and the codes' offset: sum_g s_g (64 * 3 + z_g) sum_g(x), 16 groups a step.
  for (std::size_t i = 0; i < C; ++i)
    for (std::size_t r = 0; r < R; ++r) {
      __m512 zt = _mm512_setzero_ps();
      for (std::size_t g = 0; g < groups; g += 16) {
        const __mmask16 m = groups - g >= 16 ? __mmask16(0xffff) : __mmask16((1u << (groups - g)) - 1);
        zt = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, params[2 * i + 1] + g), _mm512_maskz_loadu_ps(m, xsum + r * groups + g), zt);
      }
      c[r * ldc + j + i] = _mm512_reduce_add_ps(acc[r][i]) - _mm512_reduce_add_ps(zt);
    }
}

// 16 group parameters from g on (masked to m) as fp32, from bf16 bits or fp32.
inline __m512 params16(const std::uint8_t* p, std::size_t g, bool bf16, __mmask16 m) {
  if (!bf16) return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(p) + g);
  const __m256i b = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const std::uint16_t*>(p) + g);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

// Groups' scale and zero as fp32: 64 s, then s (64 * 3 + z), per channel (channels64's params).
void convert_params(const PackedWeights& w, std::size_t j0, std::size_t n, std::vector<float>& buf, const float** params) {
  const std::size_t groups = w.hidden / w.group, width = w.bf16_group_params ? 2 : 4;
  buf.resize(2 * n * groups);
  const __m512 offset = _mm512_set1_ps(kCodeScale * kOffset), code_scale = _mm512_set1_ps(kCodeScale);
  for (std::size_t i = 0; i < n; ++i) {
    float* s = buf.data() + 2 * i * groups;
    float* zt = s + groups;
    const std::uint8_t* sp = w.group_scales.data() + (j0 + i) * groups * width;
    const std::uint8_t* zp = w.group_zeros.data() + (j0 + i) * groups * width;
    for (std::size_t g = 0; g < groups; g += 16) {
      const __mmask16 m = groups - g >= 16 ? __mmask16(0xffff) : __mmask16((1u << (groups - g)) - 1);
      const __m512 vs = params16(sp, g, w.bf16_group_params, m);
      _mm512_mask_storeu_ps(s + g, m, _mm512_mul_ps(vs, code_scale));
      _mm512_mask_storeu_ps(zt + g, m, _mm512_mul_ps(vs, _mm512_add_ps(offset, params16(zp, g, w.bf16_group_params, m))));
    }
    params[2 * i] = s;
    params[2 * i + 1] = zt;
  }
}

template <std::size_t R>
void rows_pass(const PackedWeights& w, const std::uint16_t* x, const float* xsum, std::size_t j0, std::size_t j1, float* c,
               std::size_t ldc, const float* const* params) {
  constexpr std::size_t C = kBf16ChannelsPerPass<R>;
  std::size_t j = j0;
  if (w.block == 64) {
    for (; j + C <= j1; j += C) channels64<R, C>(w, j, x, xsum, c, ldc, params + 2 * (j - j0));
    for (; j < j1; ++j) channels64<R, 1>(w, j, x, xsum, c, ldc, params + 2 * (j - j0));
    return;
  }
  for (; j + C <= j1; j += C) channels<R, C>(w, j, x, xsum, c, ldc);
  for (; j < j1; ++j) channels<R, 1>(w, j, x, xsum, c, ldc);
}

}  // namespace

void avx512bf16_int4(const PackedWeights& w, const std::uint16_t* xb, const float* xsum, std::size_t rows, std::size_t j0,
                     std::size_t j1, float* c, std::size_t ldc) {
  using Fn = void (*)(const PackedWeights&, const std::uint16_t*, const float*, std::size_t, std::size_t, float*, std::size_t,
                      const float* const*);
  static constexpr Fn by_rows[kRowsPerPass] = {rows_pass<1>, rows_pass<2>, rows_pass<3>, rows_pass<4>,
                                               rows_pass<5>, rows_pass<6>, rows_pass<7>, rows_pass<8>};
  const std::size_t groups = w.hidden / w.group;
  thread_local std::vector<float> buf;  // the 8 channels' fp32 group parameters
  const float* params[16] = {};
  // Eight channels at a time through every row pass: their codes stay in L1/L2 between passes.
  for (std::size_t jb = j0; jb < j1; jb += 8) {
    const std::size_t je = std::min(j1, jb + 8);
    if (w.block == 64) convert_params(w, jb, je - jb, buf, params);
    for (std::size_t m = 0; m < rows; m += kRowsPerPass) {
      const std::size_t n = std::min(kRowsPerPass, rows - m);
      by_rows[n - 1](w, xb + m * w.hidden, xsum + m * groups, jb, je, c + m * ldc, ldc, params);
    }
  }
}

}  // namespace opmeter::linear
