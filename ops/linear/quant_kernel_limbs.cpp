// int4 and int8 weight-only at a few rows (decode) on AVX-512 VNNI: int4 packed in tiles
// (quant_kernel.hpp; flags in CMakeLists.txt). At M = 1 the AMX kernel moves every decoded code
// through memory (32 stores per 512 code bytes) and the bf16 vector kernel waits on vdpbf16ps
// (one per 2 cycles on the Xeon VMs measured); vpdpbusd issues twice a cycle there and takes the
// codes as they are, unsigned bytes 0..15. So x goes in as integers instead: each row's group of x
// is split into two int8 limbs, x = a (hi + lo / 254) with a = max|x| / 127 (vnni_split_limbs),
// which leaves an error of at most a / 508 per element, under bf16's own rounding of x for every
// value above 1/4 of the group's largest (and 2^-16 of that largest below it). Then
// sum_k x_k q_k = a (H + L / 254), H and L exact int32 sums of vpdpbusd, and a group adds
// s (a (H + L / 254) - z sum_g(x)) to its channels.
// A 64-byte load of a tile step holds codes of two B-tile rows (pairs of k for 16 channels); one
// vpermb regroups them so that dword lane i holds channel i's four consecutive k (low nibbles:
// k = 64 t + 4 u + r, high nibbles the same + 32), the layout vpdpbusd sums, against the limbs'
// bytes at k broadcast from memory. Per 64 code bytes and row: vpermb, vpand, gf2p8affineqb and
// four vpdpbusd; eight accumulators at one row (four chains per limb) keep vpdpbusd's latency
// hidden.
// int8 weight-only (per-channel scales) the same way on the quad layout (quant_kernel.hpp): 64
// code bytes (16 channels x 4 k) per load, stored plus 128 as vpdpbusd's unsigned operand, two
// vpdpbusd per load and row, the shift taken back per group with the limbs' sums.
// GCC 12's _mm512_reduce_max_ps reads an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "ops/linear/quant_block16.hpp"
#include "ops/linear/quant_kernel.hpp"
#include "ops/linear/stream_prefetch.hpp"

namespace opmeter::linear {
namespace {

constexpr std::size_t kChannels = block16::kChannels;
constexpr float kLoScale = 1.f / 254;

// Byte 4 i + r of a regrouped load comes from byte 32 (r / 2) + 2 i + r % 2 of the tile step's
// 64 bytes (rows c = 2 u and 2 u + 1 of B: byte 32 c + 2 i + p is channel i's k = 2 c + p).
__m512i regroup_index() {
  alignas(64) std::uint8_t idx[64];
  for (unsigned i = 0; i < 16; ++i)
    for (unsigned r = 0; r < 4; ++r) idx[4 * i + r] = static_cast<std::uint8_t>(32 * (r / 2) + 2 * i + r % 2);
  return _mm512_load_si512(idx);
}

inline __m512i bcast4(const std::int8_t* p) {
  std::int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// R rows of channel block jb: out[m * 16 + i]. P: accumulator chains per limb and nibble (two at
// one row, where nothing else hides vpdpbusd's 5-cycle latency). Pairs: groups of 32, whose step
// of 64 k holds two groups, its low nibbles (k = 64 t .. 64 t + 31) group 2 t and its high ones
// group 2 t + 1; else a group is whole steps.
template <std::size_t R, std::size_t P, bool Pairs>
void block_rows(const PackedWeights& w, std::size_t jb, const XLimbs& x, std::size_t m0, const float* xsum,
                float* out) {
  const std::size_t h = w.hidden, groups = h / w.group, steps_per_group = Pairs ? 1 : w.group / 64;
  const std::uint8_t* codes = w.codes.data() + jb * 8 * h;
  const std::size_t last = w.codes.size() - 512;  // prefetches stay within the codes
  const std::size_t width = w.bf16_group_params ? 2 : 4;
  const std::uint8_t* sp = w.group_scales.data() + jb * groups * kChannels * width;
  const std::uint8_t* zp = w.group_zeros.data() + jb * groups * kChannels * width;
  const __m512i regroup = regroup_index(), low4 = _mm512_set1_epi8(0x0f);
  const __m512i high_nibble = _mm512_set1_epi64(0x1020408000000000ll);  // bits 4..7 to 0..3
  __m512 y[R];
  for (std::size_t m = 0; m < R; ++m) y[m] = _mm512_setzero_ps();
  // Group g's sums of row m, hi and lo limbs: a (H + L / 254) - z sum_g(x), times s into y.
  auto finish = [&](std::size_t g, std::size_t m, __m512i hi_sum, __m512i lo_sum, __m512 s, __m512 z) {
    const std::size_t at = (m0 + m) * groups + g;
    const float a = x.scale[at];
    __m512 dot = _mm512_mul_ps(_mm512_cvtepi32_ps(hi_sum), _mm512_set1_ps(a));
    dot = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo_sum), _mm512_set1_ps(a * kLoScale), dot);
    dot = _mm512_fnmadd_ps(z, _mm512_set1_ps(xsum[at]), dot);
    y[m] = _mm512_fmadd_ps(s, dot, y[m]);
  };
  auto params = [&](std::size_t g, const std::uint8_t* p) {
    return block16::params(p + g * kChannels * width, w.bf16_group_params);
  };
  for (std::size_t t0 = 0; t0 < h / 64; t0 += steps_per_group) {
    __m512i acc[R][2][2][P];  // [row][limb hi, lo][nibble low, high][chain]
    for (auto& row : acc)
      for (auto& limb : row)
        for (auto& nib : limb)
          for (auto& a : nib) a = _mm512_setzero_si512();
    for (std::size_t t = t0; t < t0 + steps_per_group; ++t) {
      const std::uint8_t* step = codes + 512 * t;
      prefetch_stream(w.codes.data() + std::min(std::size_t(step - w.codes.data()) + kStreamAheadBytes, last), 512);
#pragma GCC unroll 8
      for (std::size_t u = 0; u < 8; ++u) {
        const __m512i v = _mm512_permutexvar_epi8(regroup, _mm512_loadu_si512(step + 64 * u));
        const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_gf2p8affine_epi64_epi8(v, high_nibble, 0);
        const std::size_t k = 64 * t + 4 * u, c = u % P;
        for (std::size_t m = 0; m < R; ++m) {
          const std::int8_t* xh = x.hi.data() + (m0 + m) * h;
          const std::int8_t* xl = x.lo.data() + (m0 + m) * h;
          acc[m][0][0][c] = _mm512_dpbusd_epi32(acc[m][0][0][c], lo, bcast4(xh + k));
          acc[m][1][0][c] = _mm512_dpbusd_epi32(acc[m][1][0][c], lo, bcast4(xl + k));
          acc[m][0][1][c] = _mm512_dpbusd_epi32(acc[m][0][1][c], hi, bcast4(xh + k + 32));
          acc[m][1][1][c] = _mm512_dpbusd_epi32(acc[m][1][1][c], hi, bcast4(xl + k + 32));
        }
      }
    }
    // A limb's sum over the chains of the given nibbles.
    auto sum = [&](std::size_t m, std::size_t limb, std::size_t nib0, std::size_t nibs) {
      __m512i total = acc[m][limb][nib0][0];
      for (std::size_t n = nib0; n < nib0 + nibs; ++n)
        for (std::size_t c = n == nib0 ? 1 : 0; c < P; ++c) total = _mm512_add_epi32(total, acc[m][limb][n][c]);
      return total;
    };
    if constexpr (Pairs) {
      for (std::size_t nib = 0; nib < 2; ++nib) {
        const std::size_t g = 2 * t0 + nib;
        const __m512 s = params(g, sp), z = params(g, zp);
        for (std::size_t m = 0; m < R; ++m) finish(g, m, sum(m, 0, nib, 1), sum(m, 1, nib, 1), s, z);
      }
    } else {
      const std::size_t g = t0 / steps_per_group;
      const __m512 s = params(g, sp), z = params(g, zp);
      for (std::size_t m = 0; m < R; ++m) finish(g, m, sum(m, 0, 0, 2), sum(m, 1, 0, 2), s, z);
    }
  }
  for (std::size_t m = 0; m < R; ++m) _mm512_storeu_ps(out + m * kChannels, y[m]);
}

template <bool Pairs>
void block(const PackedWeights& w, std::size_t jb, const XLimbs& x, std::size_t m0, std::size_t rows, const float* xsum,
           float* out) {
  switch (rows) {
    case 1: return block_rows<1, 2, Pairs>(w, jb, x, m0, xsum, out);
    case 2: return block_rows<2, 1, Pairs>(w, jb, x, m0, xsum, out);
    case 3: return block_rows<3, 1, Pairs>(w, jb, x, m0, xsum, out);
    default: return block_rows<4, 1, Pairs>(w, jb, x, m0, xsum, out);
  }
  static_assert(kLimbPassRows == 4, "block() has a case for each row count up to kLimbPassRows");
}

// int8 in quads: R rows of channel block jb, times the channel scales, into out[m * 16 + i]. P:
// accumulator chains per limb and row (vpdpbusd's latency); L: limbs (1 where x is its hi limbs
// alone, int8 activation codes). The codes are stored plus 128, so sum_k (q + 128) h_k =
// H + 128 sum(h): the limbs' group sums take the shift back.
template <std::size_t R, std::size_t P, std::size_t L>
void int8_block_rows(const PackedWeights& w, std::size_t jb, const XLimbs& x, std::size_t m0, float* out) {
  const std::size_t h = w.hidden, groups = h / kInt8LimbGroup;
  const std::uint8_t* codes = w.codes.data() + jb * kChannels * h;
  const std::size_t last = w.codes.size() - 1024;  // prefetches stay within the codes
  __m512 dot[R];
  for (std::size_t m = 0; m < R; ++m) dot[m] = _mm512_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    const std::uint8_t* run = codes + 1024 * g;  // 16 runs of 64 bytes: k = 64 g .. 64 g + 63
    prefetch_stream(w.codes.data() + std::min(std::size_t(run - w.codes.data()) + kStreamAheadBytes, last), 1024);
    __m512i acc[R][L][P];
    for (auto& row : acc)
      for (auto& limb : row)
        for (auto& a : limb) a = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (std::size_t u = 0; u < 16; ++u) {
      const __m512i v = _mm512_loadu_si512(run + 64 * u);
      const std::size_t k = 64 * g + 4 * u, c = u % P;
      for (std::size_t m = 0; m < R; ++m) {
        acc[m][0][c] = _mm512_dpbusd_epi32(acc[m][0][c], v, bcast4(x.hi.data() + (m0 + m) * h + k));
        if constexpr (L == 2) acc[m][L - 1][c] = _mm512_dpbusd_epi32(acc[m][L - 1][c], v, bcast4(x.lo.data() + (m0 + m) * h + k));
      }
    }
    for (std::size_t m = 0; m < R; ++m) {
      const std::size_t at = (m0 + m) * groups + g;
      __m512i sum[L];
      for (std::size_t limb = 0; limb < L; ++limb) {
        sum[limb] = acc[m][limb][0];
        for (std::size_t c = 1; c < P; ++c) sum[limb] = _mm512_add_epi32(sum[limb], acc[m][limb][c]);
      }
      const float a = x.scale[at];
      sum[0] = _mm512_sub_epi32(sum[0], _mm512_set1_epi32(128 * x.hi_sum[at]));
      dot[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[0]), _mm512_set1_ps(a), dot[m]);
      if constexpr (L == 2) {
        sum[1] = _mm512_sub_epi32(sum[1], _mm512_set1_epi32(128 * x.lo_sum[at]));
        dot[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[1]), _mm512_set1_ps(a * kLoScale), dot[m]);
      }
    }
  }
  const __m512 scale = _mm512_loadu_ps(w.scales.data() + jb * kChannels);
  for (std::size_t m = 0; m < R; ++m) _mm512_storeu_ps(out + m * kChannels, _mm512_mul_ps(dot[m], scale));
}

template <std::size_t L>
void int8_block(const PackedWeights& w, std::size_t jb, const XLimbs& x, std::size_t m0, std::size_t rows, float* out) {
  switch (rows) {
    case 1: return int8_block_rows<1, 4, L>(w, jb, x, m0, out);
    case 2: return int8_block_rows<2, 2, L>(w, jb, x, m0, out);
    case 3: return int8_block_rows<3, 1, L>(w, jb, x, m0, out);
    default: return int8_block_rows<4, 1, L>(w, jb, x, m0, out);
  }
  static_assert(kLimbPassRows == 4, "int8_block() has a case for each row count up to kLimbPassRows");
}

// The channels [j0, j1) of a pass's blocks (16 channels each, the last padded) into c.
template <class Block>
void by_blocks(std::size_t rows, std::size_t j0, std::size_t j1, float* c, std::size_t ldc, Block&& block) {
  alignas(64) float out[kLimbPassRows * kChannels];
  for (std::size_t m0 = 0; m0 < rows; m0 += kLimbPassRows) {
    const std::size_t mr = std::min(kLimbPassRows, rows - m0);
    for (std::size_t jb = j0 / kChannels; jb * kChannels < j1; ++jb) {
      block(jb, m0, mr, out);
      block16::copy_channels(out, mr, jb, j0, j1, c, m0, ldc);
    }
  }
}

}  // namespace

void vnni_split_limbs(const std::uint16_t* xb, std::size_t row, std::size_t hidden, std::size_t group, XLimbs& x) {
  assert(x.form == XLimbs::Form::limbs);  // its kernels read no words (int4_limbs_words is false)
  const std::size_t groups = hidden / group;
  std::int8_t* hi = x.hi.data() + row * hidden;
  std::int8_t* lo = x.lo.data() + row * hidden;
  auto load16 = [&](std::size_t k) { return block16::bf16x16(xb + row * hidden + k); };
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t k0 = g * group;
    __m512i hi_sum = _mm512_setzero_si512(), lo_sum = hi_sum;
    __m512 big = _mm512_setzero_ps();
    for (std::size_t k = k0; k < k0 + group; k += 16) big = _mm512_max_ps(big, _mm512_abs_ps(load16(k)));
    const float largest = _mm512_reduce_max_ps(big);
    // A group of zeros (or one holding inf/NaN, whose products are not numbers anyway) gets
    // limbs 0 and its scale as it is, so that the output shows what the reference would.
    // (127 / largest overflows for groups of denormals: those, like zeros, keep limbs 0.)
    const bool usable = largest >= 0x1p-100f && std::isfinite(largest);
    x.scale[row * groups + g] = usable ? largest / 127 : largest;
    const __m512 inv = _mm512_set1_ps(usable ? 127 / largest : 0.f), lo_unit = _mm512_set1_ps(254.f);
    for (std::size_t k = k0; k < k0 + group; k += 16) {
      const __m512 v = _mm512_mul_ps(load16(k), inv);  // |v| <= 127 (an ulp over at most: rounds to 127)
      const __m512 h = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512 l = _mm512_mul_ps(_mm512_sub_ps(v, h), lo_unit);  // |v - h| <= 1/2: |l| <= 127
      const __m512i hv = _mm512_cvtps_epi32(h), lv = _mm512_cvtps_epi32(l);
      hi_sum = _mm512_add_epi32(hi_sum, hv);
      lo_sum = _mm512_add_epi32(lo_sum, lv);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(hi + k), _mm512_cvtsepi32_epi8(hv));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(lo + k), _mm512_cvtsepi32_epi8(lv));
    }
    x.hi_sum[row * groups + g] = _mm512_reduce_add_epi32(hi_sum);
    x.lo_sum[row * groups + g] = _mm512_reduce_add_epi32(lo_sum);
  }
}

void vnni_int4(const PackedWeights& w, const XLimbs& x, const float* xsum, std::size_t rows, std::size_t j0,
               std::size_t j1, float* c, std::size_t ldc) {
  assert(w.tiles && w.group % 32 == 0);  // the tile layout (steps of 64 k: groups of 32 pair up)
  by_blocks(rows, j0, j1, c, ldc, [&](std::size_t jb, std::size_t m0, std::size_t mr, float* out) {
    w.group == 32 ? block<true>(w, jb, x, m0, mr, xsum, out) : block<false>(w, jb, x, m0, mr, xsum, out);
  });
}

void vnni_int8(const PackedWeights& w, const XLimbs& x, std::size_t rows, std::size_t j0, std::size_t j1, float* c,
               std::size_t ldc) {
  assert(w.quads);
  by_blocks(rows, j0, j1, c, ldc, [&](std::size_t jb, std::size_t m0, std::size_t mr, float* out) {
    x.one_limb() ? int8_block<1>(w, jb, x, m0, mr, out) : int8_block<2>(w, jb, x, m0, mr, out);
  });
}

}  // namespace opmeter::linear
