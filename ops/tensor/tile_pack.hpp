#pragma once
// The two shuffles that put bf16 operands into AMX's B-tile layout (16 rows of 16 pairs: a row
// holds, for 16 columns, two consecutive elements of the sum), shared by the AMX GEMM
// (ops/tensor/amx_gemm_bf16.cpp) and the blocked attention's AMX products. For files compiled
// with AVX-512BW.
#include <immintrin.h>

#include <cstdint>

namespace opmeter::tensor::tile_pack {

// Two rows of 32 bf16 (elements k and k + 1 of the sum, for 32 columns) into the two B-tile rows
// of their pair: lo() for columns 0-15, hi() for 16-31, each [column][k, k + 1].
struct PairInterleave {
  PairInterleave() {
    // Word i of the result: even i from row 0's word i / 2, odd from row 1's (index 32 + i / 2).
    alignas(64) std::uint16_t l[32], h[32];
    for (int i = 0; i < 32; ++i) {
      l[i] = static_cast<std::uint16_t>((i & 1 ? 32 : 0) + i / 2);
      h[i] = static_cast<std::uint16_t>(l[i] + 16);
    }
    take_lo = _mm512_load_si512(l);
    take_hi = _mm512_load_si512(h);
  }
  __m512i lo(__m512i row0, __m512i row1) const { return _mm512_permutex2var_epi16(row0, take_lo, row1); }
  __m512i hi(__m512i row0, __m512i row1) const { return _mm512_permutex2var_epi16(row0, take_hi, row1); }
  __m512i take_lo, take_hi;
};

// r[c] = column c of the 16 x 16 dword matrix r (row j in r[j]): four stages of unpacks and lane
// shuffles. After the first two, u[4 g + q]'s 128-bit lane L holds rows 4g..4g+3 of column 4L + q.
// GCC 12's lane-shuffle intrinsics read an intentionally undefined register: a known false
// positive, silenced for this function only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int q = 0; q < 4; ++q) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x44), x1 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xee);
    const __m512i y0 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x44), y1 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xee);
    r[q] = _mm512_shuffle_i32x4(x0, y0, 0x88);
    r[4 + q] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
    r[8 + q] = _mm512_shuffle_i32x4(x1, y1, 0x88);
    r[12 + q] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
  }
}
#pragma GCC diagnostic pop


}  // namespace opmeter::tensor::tile_pack
