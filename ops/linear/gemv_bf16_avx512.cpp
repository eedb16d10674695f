// A bf16 GEMV for a few rows on AVX512_BF16 (flags in CMakeLists.txt): each output channel's row
// of W is contiguous (W is out x hidden), so four channels at a time stream their rows once for
// all the pass's rows, 32 weights per vdpbf16ps against each row of x, in fp32; a masked load
// takes hidden's tail. At decode a layer's bytes are its weights: one vdpbf16ps per 64 bytes of W
// and row is well under what this VM's memory delivers per cycle, so it reads at memory speed.
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "ops/linear/gemv_bf16.hpp"

namespace opmeter::linear {
namespace {

// Rows of W up to this many weights are short: they end before the hardware prefetcher has ramped
// up on them, so each block of channels fetches the next channels' rows as it reads its own. On
// the Emerald Rapids VM (2026-11-28, docs/BENCHMARKS.md) that read attn.wo's 2 KiB rows at M = 1
// 1.2-1.3x faster; rows of 3584 and 8192 weights read no faster, and at times slower.
constexpr std::size_t kPrefetchedHidden = 2048;

// R rows of x times C channels from j: c[r * ldc + j + i], the next `next` channels' rows fetched.
template <std::size_t R, std::size_t C>
void channels(const std::uint16_t* x, const std::uint16_t* w, std::size_t hidden, std::size_t j, float* c,
              std::size_t ldc, std::size_t next) {
  __m512 acc[R][C];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  for (std::size_t k = 0; k < hidden; k += 32) {
    const __mmask32 m = hidden - k >= 32 ? ~__mmask32(0) : (__mmask32(1) << (hidden - k)) - 1;
    __m512bh xv[R];
    for (std::size_t r = 0; r < R; ++r) xv[r] = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, x + r * hidden + k));
    for (std::size_t i = 0; i < next; ++i)
      _mm_prefetch(reinterpret_cast<const char*>(w + (j + C + i) * hidden + k), _MM_HINT_T0);
    for (std::size_t i = 0; i < C; ++i) {
      const __m512bh wv = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, w + (j + i) * hidden + k));
      for (std::size_t r = 0; r < R; ++r) acc[r][i] = _mm512_dpbf16_ps(acc[r][i], xv[r], wv);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < C; ++i) c[r * ldc + j + i] = _mm512_reduce_add_ps(acc[r][i]);
}

template <std::size_t R>
void rows_pass(const std::uint16_t* x, const std::uint16_t* w, std::size_t hidden, std::size_t j0, std::size_t j1,
               float* c, std::size_t ldc) {
  std::size_t j = j0;
  const bool short_rows = hidden <= kPrefetchedHidden;
  for (; j + 4 <= j1; j += 4)
    channels<R, 4>(x, w, hidden, j, c, ldc, short_rows ? std::min<std::size_t>(4, j1 - j - 4) : 0);
  for (; j < j1; ++j) channels<R, 1>(x, w, hidden, j, c, ldc, 0);
}

}  // namespace

void gemv_bf16_avx512(const std::uint16_t* x, std::size_t rows, const std::uint16_t* w, std::size_t hidden, std::size_t j0,
               std::size_t j1, float* c, std::size_t ldc) {
  for (std::size_t m = 0; m < rows; m += 4) {
    const std::uint16_t* xm = x + m * hidden;
    float* cm = c + m * ldc;
    switch (std::min<std::size_t>(4, rows - m)) {
      case 1: rows_pass<1>(xm, w, hidden, j0, j1, cm, ldc); break;
      case 2: rows_pass<2>(xm, w, hidden, j0, j1, cm, ldc); break;
      case 3: rows_pass<3>(xm, w, hidden, j0, j1, cm, ldc); break;
      default: rows_pass<4>(xm, w, hidden, j0, j1, cm, ldc); break;
    }
  }
}

}  // namespace opmeter::linear
