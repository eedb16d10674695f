// int4 weight-only with bf16 activations on AMX (flags in CMakeLists.txt), for weights packed in
// tiles (quant_kernel.hpp). On these CPUs a vdpbf16ps takes two cycles of the vector ports that
// also decode the codes, which bounds the vector kernel (quant_kernel_avx512bf16.cpp) at about
// half the memory bandwidth at M = 1; tdpbf16ps runs the products on the tile unit instead.
// Per step of 64 weights of a block of 16 channels, the 512 code bytes are decoded as there (bf16
// numbers 3 + q / 64: vpmovzxbw, vpternlog, gf2p8affineqb) into two B tiles (16 pairs of k x 16
// channels each), which tdpbf16ps multiplies by the rows' x read in place as A tiles (rows x 32
// bf16) into a rows x 16 fp32 C tile, one per group. Each group's C is stored, and the group's
// scale and the offset and zero point (s (192 + z) sum_g(x), as in the vector kernel) are applied
// per row as two FMAs over the 16 channels. A tile load cannot take its data from stores still in
// flight, so steps are decoded kLead steps ahead of their tile loads.
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/linear/quant_block16.hpp"
#include "ops/linear/quant_kernel.hpp"
#include "ops/tensor/amx.hpp"

namespace opmeter::linear {
namespace {

constexpr std::size_t kChannels = block16::kChannels, kMaxRows = 16;  // a B tile's channels, an A tile's rows
constexpr std::size_t kLead = 2, kRing = kLead + 2, kPrefetch = 8;
constexpr float kCodeScale = 64, kOffset = 3;  // bf16 bits 0x4040 | q are 3 + q / 64

// Tiles 0, 1: C of even and odd groups (rows x 16 fp32); 2, 3 and 4, 5: their B tiles; 6, 7: A
// (x, rows x 32 bf16, the first and second 32 weights of a step).
constexpr amx::TileConfig tile_config(std::size_t rows) {
  const amx::TileShape c{rows, 64}, b{kChannels, 64}, a{rows, 64};
  return amx::tile_config({c, c, b, b, b, b, a, a});
}

struct Scratch {
  alignas(64) std::uint16_t b[kRing][2][kChannels * 32];  // decoded steps: B0, B1 rows
  std::vector<float> parts;                                // per group: rows x 16 sums of x (3 + q / 64)
};

// Step `p` (512 bytes) decoded: byte 32 c + i's low nibble to b0's row c, word i; high to b1's.
inline void decode_step(const std::uint8_t* p, std::uint16_t* b0, std::uint16_t* b1) {
  const __m512i low4 = _mm512_set1_epi16(0xf), bits = _mm512_set1_epi16(0x4040);
  const __m512i hi_map = _mm512_set1_epi64(0x1020408000000000ll);  // high nibble to bits 0..3, xor 0x40
  for (std::size_t c = 0; c < 16; ++c) {
    const __m512i b = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * c)));
    _mm512_store_si512(b0 + 32 * c, _mm512_ternarylogic_epi32(b, low4, bits, 0xea));  // (b & 15) | 0x4040
    _mm512_store_si512(b1 + 32 * c, _mm512_gf2p8affine_epi64_epi8(b, hi_map, 0x40));
  }
}


// Channel block jb (channels 16 jb ..), rows of x (<= 16, the tile config's): out[m * 16 + i].
void block_pass(const PackedWeights& w, std::size_t jb, const std::uint16_t* x, const float* xsum, std::size_t rows,
                float* out, Scratch& s) {
  const std::size_t h = w.hidden, groups = h / w.group, steps = h / 64, per_group = w.group / 64;
  const std::uint8_t* codes = w.codes.data() + jb * 8 * h;
  float* parts = s.parts.data();
  for (std::size_t t = 0; t < std::min(kLead, steps); ++t) decode_step(codes + 512 * t, s.b[t][0], s.b[t][1]);
  for (std::size_t t = 0; t < steps; ++t) {
    // The codes are one stream, prefetched kPrefetch steps ahead (into the next block's at the
    // end, within the array): without it the misses wait behind the tile unit's work (a third
    // of the vector kernel's speed from memory).
    const std::size_t ahead = std::min(jb * 8 * h + 512 * (t + kPrefetch), w.codes.size() - 512);
    for (std::size_t l = 0; l < 512; l += 64) _mm_prefetch(reinterpret_cast<const char*>(w.codes.data() + ahead + l), _MM_HINT_T0);
    if (t + kLead < steps) {
      auto& b = s.b[(t + kLead) % kRing];
      decode_step(codes + 512 * (t + kLead), b[0], b[1]);
    }
    const std::size_t g = t / per_group;
    const bool first = t % per_group == 0, last = t % per_group == per_group - 1;
    const auto& b = s.b[t % kRing];
    const std::uint16_t* xk = x + 64 * t;
    // Tile numbers are immediates: even groups on tiles 0, 2, 3, odd ones on 1, 4, 5.
    if (g % 2 == 0) {
      if (first) _tile_zero(0);
      _tile_loadd(2, b[0], 64);
      _tile_loadd(3, b[1], 64);
      _tile_loadd(6, xk, 2 * h);
      _tile_loadd(7, xk + 32, 2 * h);
      _tile_dpbf16ps(0, 6, 2);
      _tile_dpbf16ps(0, 7, 3);
      if (last) _tile_stored(0, parts + g * rows * kChannels, 64);
    } else {
      if (first) _tile_zero(1);
      _tile_loadd(4, b[0], 64);
      _tile_loadd(5, b[1], 64);
      _tile_loadd(6, xk, 2 * h);
      _tile_loadd(7, xk + 32, 2 * h);
      _tile_dpbf16ps(1, 6, 4);
      _tile_dpbf16ps(1, 7, 5);
      if (last) _tile_stored(1, parts + g * rows * kChannels, 64);
    }
  }
  // out = sum_g 64 s_g parts_g - s_g (192 + z_g) sum_g(x), 16 channels a vector.
  const std::size_t width = w.bf16_group_params ? 2 : 4;
  const std::uint8_t* sp = w.group_scales.data() + jb * groups * kChannels * width;
  const std::uint8_t* zp = w.group_zeros.data() + jb * groups * kChannels * width;
  const __m512 offset = _mm512_set1_ps(kCodeScale * kOffset), code_scale = _mm512_set1_ps(kCodeScale);
  __m512 acc[kMaxRows];
  for (std::size_t m = 0; m < rows; ++m) acc[m] = _mm512_setzero_ps();
  for (std::size_t g = 0; g < groups; ++g) {
    const __m512 sc = block16::params(sp + g * kChannels * width, w.bf16_group_params);
    const __m512 zt = _mm512_mul_ps(sc, _mm512_add_ps(offset, block16::params(zp + g * kChannels * width, w.bf16_group_params)));
    const __m512 s64 = _mm512_mul_ps(sc, code_scale);
    for (std::size_t m = 0; m < rows; ++m) {
      acc[m] = _mm512_fmadd_ps(s64, _mm512_loadu_ps(parts + (g * rows + m) * kChannels), acc[m]);
      acc[m] = _mm512_fnmadd_ps(zt, _mm512_set1_ps(xsum[m * groups + g]), acc[m]);
    }
  }
  for (std::size_t m = 0; m < rows; ++m) _mm512_storeu_ps(out + m * kChannels, acc[m]);
}

}  // namespace

void amx_int4(const PackedWeights& w, const std::uint16_t* xb, const float* xsum, std::size_t rows, std::size_t j0,
              std::size_t j1, float* c, std::size_t ldc) {
  if (!w.tiles) return avx512bf16_int4(w, xb, xsum, rows, j0, j1, c, ldc);
  const std::size_t groups = w.hidden / w.group;
  thread_local Scratch s;
  s.parts.resize(groups * kMaxRows * kChannels);
  alignas(64) float out[kMaxRows * kChannels];
  for (std::size_t m0 = 0; m0 < rows; m0 += kMaxRows) {
    const std::size_t mr = std::min(kMaxRows, rows - m0);
    // The tile configuration is thread state that other code (oneDNN) sets too: loaded when it
    // is not ours (ldtilecfg costs about 50 ns, reading it back 5), and left for the next call.
    const amx::TileConfig want = tile_config(mr);
    amx::TileConfig now;
    _tile_storeconfig(&now);
    if (std::memcmp(&now, &want, sizeof want) != 0) _tile_loadconfig(&want);
    for (std::size_t jb = j0 / kChannels; jb * kChannels < j1; ++jb) {
      block_pass(w, jb, xb + m0 * w.hidden, xsum + m0 * groups, mr, out, s);
      block16::copy_channels(out, mr, jb, j0, j1, c, m0, ldc);
    }
  }
}

}  // namespace opmeter::linear
