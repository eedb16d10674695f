// The AMX bf16 GEMM (amx_gemm.hpp); built with the AMX flags (CMakeLists.txt).
// Blocking: A is first copied into tile order (pack_rows; or read in place, a_in_place says when),
// and where more than 512 rows share B, B's panels too (into the caller's b_tiles). The threads
// share out tasks of (up to) 512 rows x 256 columns of C. A task walks k in chunks of 256: it packs B's chunk x its columns (unless packed)
// into panels of 32 columns in the tile layout (pairs of k interleaved, [tile][k / 2][16][2]: each
// B tile 1 KiB contiguous), then runs each panel, kept in L1, over the task's rows, whose chunk of
// A stays in L2. The micro-kernel is C's 32 x 32 block in four tiles (two A tiles, two B tiles,
// four products per 32 of k). Between chunks of k a block's sums wait in fp32 in the task's
// scratch; after the last they are rounded to bf16 into C, whose lines are prefetched for writing
// while the earlier chunks compute (C's rows lie ldc apart: each store would otherwise wait for
// its line's read, all in the last chunk). Prefetching B's next chunk measured no gain.
// What bounds it (docs/BENCHMARKS.md): a tile load per product, so every tile is read from
// 64-byte-aligned memory (a row across two cache lines takes two loads: half the speed; A is read
// in place only where its rows are whole lines), and the operand that streams through L2 is the
// one read in tile order.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <numeric>
#include <stdexcept>

#include "ops/tensor/amx.hpp"
#include "ops/tensor/amx_gemm.hpp"
#include "ops/tensor/bf16x16.hpp"
#include "ops/tensor/tile_pack.hpp"

namespace opmeter::tensor {
namespace {

constexpr std::size_t kBlock = 32;                       // C's rows and columns per micro-kernel
constexpr std::size_t kRowsPerTask = 512, kColsPerTask = 256, kChunk = 256;
constexpr std::size_t kPanels = kColsPerTask / kBlock;  // panels of the widest task
constexpr std::size_t kPrefetchRows = 16;               // B rows the packing reads ahead

// Tiles 0-3: C (rows 0-15 x cols 0-15, 0-15 x 16-31, 16-31 x 0-15, 16-31 x 16-31; fp32); 4, 5: A
// (rows 0-15 and 16-31, 32 bf16 of k); 6, 7: B (16 pairs of k x columns 0-15 and 16-31).
constexpr amx::TileShape kTile{16, 64};
constexpr amx::TileConfig kConfig = amx::tile_config({kTile, kTile, kTile, kTile, kTile, kTile, kTile, kTile});

// A thread's scratch, made once per thread and kept (not a Buffer: it outlives the case whose
// memory Buffer counts). 64-byte aligned: a tile row across two cache lines takes two loads, and
// a std::vector's large blocks start 16 bytes into a page.
template <class T>
struct Aligned {
  explicit Aligned(std::size_t n) : p(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {
    if (!p) throw std::bad_alloc();
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* p;
};
struct Scratch {
  Aligned<std::uint16_t> panels{kChunk * kColsPerTask};
  Aligned<float> sums{kRowsPerTask * kColsPerTask};  // per block: 4 tiles of 16 x 16 fp32
  alignas(64) float rows[2][16][kBlock];              // a block's rows to round
};

// Columns per task: 256, or fewer (down to 32) until every thread has a task.
std::size_t cols_per_task(std::size_t m, std::size_t n, std::size_t threads) {
  const std::size_t row_tasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  std::size_t cols = kColsPerTask;
  while (cols > kBlock && row_tasks * ((n + cols - 1) / cols) < threads) cols /= 2;
  return cols;
}

// B rows k0 .. k0 + kc, columns n0 .. n0 + cols into panels: element (k0 + 2 i + e, n0 + 32 p + 16 t + j)
// at panels[p * kc * 32 + t * kc * 16 + i * 32 + 2 j + e].
void pack_panels(const std::uint16_t* b, std::size_t ldb, std::size_t k0, std::size_t kc, std::size_t k,
                 std::size_t n0, std::size_t cols, std::uint16_t* panels) {
  const tile_pack::PairInterleave pairs;
  for (std::size_t i = 0; i < kc / 2; ++i) {
    const std::uint16_t* r0 = b + (k0 + 2 * i) * ldb + n0;
    const std::size_t ahead = k0 + 2 * i + kPrefetchRows;
    if (ahead + 1 < k)  // rows a page or more apart: the hardware prefetchers do not follow them
      for (std::size_t c = 0; c < cols; c += 32) {
        _mm_prefetch(reinterpret_cast<const char*>(b + ahead * ldb + n0 + c), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(b + (ahead + 1) * ldb + n0 + c), _MM_HINT_T0);
      }
    for (std::size_t p = 0; p < cols / kBlock; ++p) {
      const __m512i x0 = _mm512_loadu_si512(r0 + p * kBlock), x1 = _mm512_loadu_si512(r0 + ldb + p * kBlock);
      std::uint16_t* out = panels + p * kc * 32 + i * 32;
      _mm512_storeu_si512(out, pairs.lo(x0, x1));
      _mm512_storeu_si512(out + kc * 16, pairs.hi(x0, x1));
    }
  }
}

// pack_panels' layout from B stored n x k (row j of B^T is column j of B): for each 16 columns and
// 16 pairs of k, 16 rows of 16 dwords (a pair of k each) transposed into the tile's 16 rows.
void pack_panels_transposed(const std::uint16_t* bt, std::size_t ldb, std::size_t k0, std::size_t kc, std::size_t n0,
                            std::size_t cols, std::uint16_t* panels) {
  __m512i r[16];
  for (std::size_t u = 0; u < cols / 16; ++u) {  // 16 columns: panel u / 2, tile u % 2
    std::uint16_t* tile = panels + (u / 2) * kc * 32 + (u % 2) * kc * 16;
    for (std::size_t i0 = 0; i0 < kc / 2; i0 += 16) {
      for (std::size_t j = 0; j < 16; ++j) r[j] = _mm512_loadu_si512(bt + (n0 + 16 * u + j) * ldb + k0 + 2 * i0);
      tile_pack::transpose16(r);
      for (std::size_t i = 0; i < 16; ++i) _mm512_storeu_si512(tile + (i0 + i) * 32, r[i]);
    }
  }
}

// A's rows into tile order, once per call: block of 32 rows rb, step of 32 of k ks at
// packed[(rb * k / 32 + ks) * 1024]: its two A tiles (rows 0-15, 16-31) of 16 x 32, 1 KiB each. Read
// in place, rows a page apart fall into the same L1 and L2 sets and evict each other.
void pack_rows(const std::uint16_t* a, std::size_t lda, std::size_t rb, std::size_t k, std::uint16_t* packed) {
  for (std::size_t r = 0; r < kBlock; ++r) {
    const std::uint16_t* row = a + (rb * kBlock + r) * lda;
    std::uint16_t* out = packed + rb * k * kBlock + r / 16 * 512 + r % 16 * 32;
    for (std::size_t ks = 0; ks < k / kBlock; ++ks)
      _mm512_storeu_si512(out + ks * 1024, _mm512_loadu_si512(row + ks * kBlock));
  }
}

// The share `part` of `parts` of C's lines for rows m0 .. m0 + rows and columns n0 .. n0 + cols,
// asked for writing; C's elements are `elem` bytes (bf16 or fp32). Without it 512 x 1024 x 4096
// from cold caches took 3.6-3.8 ms against oneDNN's 2.7-2.8; with it 2.5-2.9 (docs/BENCHMARKS.md).
void prefetch_c(const void* c, std::size_t ldc, std::size_t elem, std::size_t m0, std::size_t rows, std::size_t n0,
                std::size_t cols, std::size_t part, std::size_t parts) {
  const std::size_t per_row = cols * elem / 64, lines = rows * per_row;
  for (std::size_t l = part * lines / parts; l < (part + 1) * lines / parts; ++l)
    __builtin_prefetch(static_cast<const char*>(c) + ((m0 + l / per_row) * ldc + n0) * elem + l % per_row * 64, 1, 2);
}

// Where B's panels for columns n0 .. n0 + cols and k0 .. k0 + kc lie in the k x n b_tiles: each
// task's columns take k x cols, in chunks of k.
std::uint16_t* b_panels(std::uint16_t* b_tiles, std::size_t k, std::size_t n0, std::size_t cols, std::size_t k0) {
  return b_tiles + n0 * k + k0 * cols;
}

// Whether A's rows are read in place rather than copied into tile order first: for one task of
// rows (the copy is then shared by few tasks: 512 x 1024 x 1024 ran 2-19% faster in place), when
// they spread over enough of L2's sets that the task's chunk of A stays there. Rows 8 KiB apart (k
// 4096) fall into 16 set groups, 32 rows each for 16 ways: in place they evict each other (1.2x
// slower). Past one task (the weight gradient's 4096 x 512 x 4096) in place ran 7% slower.
// Rows of a whole number of lines too (a row across two lines takes two loads per tile row).
bool a_in_place(std::size_t lda, std::size_t m) {
  constexpr std::size_t kL2WayBytes = 128 * 1024;  // Sapphire to Granite Rapids: 2 MiB, 16 ways
  const std::size_t starts = kL2WayBytes / std::gcd(lda * 2, kL2WayBytes);  // distinct set groups of the rows
  return lda % kBlock == 0 && m <= kRowsPerTask && m <= 8 * starts;         // half the ways each, at most
}

// Where a block's A tiles lie: packed (pack_rows: 1 KiB per 32 of k, the second tile 512 on, rows
// 64 bytes apart) or read in place (rows lda apart).
struct ATiles {
  std::size_t per_k, second, stride_bytes;  // elements per step of k, offset of rows 16-31, row stride
};

// C's 32 x 32 block at (row, col) += A's 32 rows (at a, laid out as `at` says) x the panel, over kc
// of k. `first`: the sums start at zero, else from `sums`; `last`: rounded into c (with streaming
// stores when `stream`; with e's bias, activation (through the kernels' epilogue) and residual),
// else kept in `sums`.
void block(const std::uint16_t* a, const ATiles& at, const std::uint16_t* panel, std::size_t kc, bool first, bool last,
           float* sums, std::uint16_t* c, float* c32, std::size_t ldc, bool stream, const AmxGemmOptions& e,
           std::size_t row, std::size_t col, Scratch& s) {
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, sums, 64);
    _tile_loadd(1, sums + 256, 64);
    _tile_loadd(2, sums + 512, 64);
    _tile_loadd(3, sums + 768, 64);
  }
  const std::uint16_t* b1 = panel + kc * 16;
  for (std::size_t kk = 0; kk < kc; kk += kBlock) {
    _tile_loadd(4, a + kk * at.per_k, at.stride_bytes);
    _tile_loadd(6, panel + kk * 16, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, b1 + kk * 16, 64);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, a + kk * at.per_k + at.second, at.stride_bytes);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (!last) {
    _tile_stored(0, sums, 64);
    _tile_stored(1, sums + 256, 64);
    _tile_stored(2, sums + 512, 64);
    _tile_stored(3, sums + 768, 64);
    return;
  }
  if (c32) {  // fp32 C: the sums as they are
    _tile_stored(0, c32, ldc * 4);
    _tile_stored(1, c32 + 16, ldc * 4);
    _tile_stored(2, c32 + 16 * ldc, ldc * 4);
    _tile_stored(3, c32 + 16 * ldc + 16, ldc * 4);
    return;
  }
  _tile_stored(0, &s.rows[0][0][0], kBlock * 4);
  _tile_stored(1, &s.rows[0][0][16], kBlock * 4);
  _tile_stored(2, &s.rows[1][0][0], kBlock * 4);
  _tile_stored(3, &s.rows[1][0][16], kBlock * 4);
  // An activation through the kernels' epilogue: straight to bf16, or in place in fp32 when a
  // residual or streaming stores follow. A bias alone is added in the loop below (through the
  // epilogue's call per block, hidden 1024 ran 5-10% slower).
  const float* bias = e.bias ? e.bias + col : nullptr;
  if (e.act != Act::none) {
    if (!e.residual && !stream) {
      kernels().epilogue(e.act, &s.rows[0][0][0], kBlock, bias, true, c, ldc, kBlock, kBlock);
      return;
    }
    kernels().epilogue(e.act, &s.rows[0][0][0], kBlock, bias, false, &s.rows[0][0][0], kBlock, kBlock, kBlock);
    bias = nullptr;
  }
  const __m512 bias_lo = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps(),
               bias_hi = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t r = 0; r < 16; ++r) {
      __m512 lo = _mm512_add_ps(_mm512_load_ps(&s.rows[h][r][0]), bias_lo),
             hi = _mm512_add_ps(_mm512_load_ps(&s.rows[h][r][16]), bias_hi);
      if (e.residual) {
        const std::uint16_t* res = e.residual + (row + 16 * h + r) * e.ldr + col;
        lo = _mm512_add_ps(lo, bf16x16(res));
        hi = _mm512_add_ps(hi, bf16x16(res + 16));
      }
      const __m512bh v = _mm512_cvtne2ps_pbh(hi, lo);
      auto* out = c + (16 * h + r) * ldc;
      if (stream)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(out), reinterpret_cast<const __m512i&>(v));
      else
        _mm512_storeu_si512(out, reinterpret_cast<const __m512i&>(v));
    }
}

}  // namespace

bool amx_gemm_b_tiles(std::size_t m) { return m > kRowsPerTask; }

bool amx_gemm_a_tiles(std::size_t lda, std::size_t m) { return !a_in_place(lda, m); }

bool amx_gemm_fits(std::size_t m, std::size_t k, std::size_t n) {
  return m > 0 && k > 0 && n > 0 && m % kBlock == 0 && k % kBlock == 0 && n % kBlock == 0 && amx::bf16_usable();
}

void amx_gemm_bf16(const std::uint16_t* a, std::size_t lda, const std::uint16_t* b, std::size_t ldb, std::uint16_t* c,
                   std::size_t ldc, std::size_t m, std::size_t k, std::size_t n, std::uint16_t* a_tiles,
                   const AmxGemmOptions& options) {
  AmxGemmOptions o = options;
  if (o.residual && o.ldr == 0) o.ldr = n;  // a residual's rows packed by default
  if (o.c_fp32 && (o.act != Act::none || o.bias || o.residual))
    throw std::logic_error("amx_gemm_bf16: fp32 C takes no epilogue");
  // Streaming stores write whole lines: C's rows must start on one.
  const bool stream = !o.c_fp32 && o.store == Store::streaming &&
                      reinterpret_cast<std::uintptr_t>(c) % 64 == 0 && ldc % 32 == 0;
  const std::size_t task_cols = cols_per_task(m, n, static_cast<std::size_t>(omp_get_max_threads()));
  const std::size_t row_tasks = (m + kRowsPerTask - 1) / kRowsPerTask, col_tasks = (n + task_cols - 1) / task_cols;
  const std::size_t tasks = row_tasks * col_tasks;
  const bool packed_once = o.b_tiles && amx_gemm_b_tiles(m);
  const bool in_place = a_in_place(lda, m);
  const ATiles at = in_place ? ATiles{1, 16 * lda, lda * 2} : ATiles{kBlock, 512, 64};
#pragma omp parallel
  {
    static thread_local Scratch s;
    _tile_loadconfig(&kConfig);
    auto pack = [&](std::size_t n0, std::size_t cols, std::size_t k0, std::size_t kc, std::uint16_t* panels) {
      if (o.b == BLayout::n_by_k)
        pack_panels_transposed(b, ldb, k0, kc, n0, cols, panels);
      else
        pack_panels(b, ldb, k0, kc, k, n0, cols, panels);
    };
    if (!in_place) {  // the same branch on every thread
#pragma omp for schedule(static)
      for (std::size_t rb = 0; rb < m / kBlock; ++rb) pack_rows(a, lda, rb, k, a_tiles);
    }
    if (packed_once) {  // B's panels once, shared by every block of rows
      const std::size_t chunks = (k + kChunk - 1) / kChunk;
#pragma omp for schedule(static)
      for (std::size_t i = 0; i < col_tasks * chunks; ++i) {
        const std::size_t n0 = i / chunks * task_cols, cols = std::min(task_cols, n - n0), k0 = i % chunks * kChunk;
        pack(n0, cols, k0, std::min(kChunk, k - k0), b_panels(o.b_tiles, k, n0, cols, k0));
      }
    }
    // Row-major order: a thread's consecutive tasks share their rows of A (static schedule).
#pragma omp for schedule(static)
    for (std::size_t t = 0; t < tasks; ++t) {
      const std::size_t m0 = t / col_tasks * kRowsPerTask, n0 = t % col_tasks * task_cols;
      const std::size_t rows = std::min(kRowsPerTask, m - m0), cols = std::min(task_cols, n - n0);
      for (std::size_t k0 = 0; k0 < k; k0 += kChunk) {
        const std::size_t kc = std::min(kChunk, k - k0);
        std::uint16_t* panels = s.panels.p;
        if (packed_once)
          panels = b_panels(o.b_tiles, k, n0, cols, k0);
        else
          pack(n0, cols, k0, kc, panels);
        const bool last_chunk = k0 + kc == k;
        // C's lines are fetched a share per block over the chunks before the last (or in the only one).
        const std::size_t chunks = (k + kChunk - 1) / kChunk, blocks = cols / kBlock * (rows / kBlock);
        const std::size_t fetch_chunks = std::max<std::size_t>(1, chunks - 1), chunk = k0 / kChunk;
        const bool fetch_c = !stream && chunk < fetch_chunks;
        for (std::size_t p = 0; p < cols / kBlock; ++p)
          for (std::size_t r = 0; r < rows / kBlock; ++r) {
            if (fetch_c)
              prefetch_c(o.c_fp32 ? static_cast<const void*>(o.c_fp32) : c, ldc, o.c_fp32 ? 4 : 2, m0, rows, n0, cols,
                         chunk * blocks + p * (rows / kBlock) + r, fetch_chunks * blocks);
            const std::size_t at_c = (m0 + r * kBlock) * ldc + n0 + p * kBlock;
            block(in_place ? a + (m0 + r * kBlock) * lda + k0 : a_tiles + (m0 + r * kBlock) * k + k0 * kBlock, at,
                  panels + p * kc * 32, kc, k0 == 0, last_chunk, s.sums.p + (r * kPanels + p) * kBlock * kBlock,
                  o.c_fp32 ? nullptr : c + at_c, o.c_fp32 ? o.c_fp32 + at_c : nullptr, ldc, stream, o, m0 + r * kBlock,
                  n0 + p * kBlock, s);
          }
      }
    }
    _mm_sfence();  // streaming stores are weakly ordered: done before the threads join
    _tile_release();
  }
}

}  // namespace opmeter::tensor
