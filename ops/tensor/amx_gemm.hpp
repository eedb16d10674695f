// A bf16 GEMM of our own on AMX tiles, for the layers' forward projections (x W^T with bias,
// activation and residual fused: tensor::AmxProjection), the training steps' backward products
// (dZ W and dZ^T A, tensor::ProjectionBackward) and the gemm op (gemm/opmeter): C = A B with A
// m x k and B k x n as stored (the reduction runs along B's rows; or B given n x k), C m x n bf16
// with fp32 accumulation rounded once to nearest even (or fp32, AmxGemmOptions::c_fp32). oneDNN 2.6's AMX matmul reaches about a quarter of the tile unit's peak on these shapes and
// needs B copied into its own layout first; this kernel packs B's panels itself, just before their
// use, so B is read once per block of rows and never copied whole. Plain C++: only
// amx_gemm_bf16.cpp is built with the AMX flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/tensor/kernels.hpp"

namespace opmeter::tensor {

// Whether amx_gemm_bf16 runs here (AMX-BF16 granted) for these sizes: every size a multiple of 32.
bool amx_gemm_fits(std::size_t m, std::size_t k, std::size_t n);

// How C is written: `cached` for a result read again soon (dX, which the LayerNorm backward reads
// next), `streaming` for one that is not (a weight gradient: streaming stores skip reading C's
// lines before writing them, 16-17 ms -> 11-12 ms for dW at 4096 x 512 x 4096, docs/BENCHMARKS.md).
enum class Store { cached, streaming };

// How B is stored: k x n row-major (the reduction along its rows: dZ W, dZ^T X), or n x k
// row-major (a weight as stored, x W^T: packed by 16 x 16 transposes of pairs of k).
enum class BLayout { k_by_n, n_by_k };

struct AmxGemmOptions {
  BLayout b = BLayout::k_by_n;
  Store store = Store::cached;
  // An epilogue on each fp32 block before it is rounded: y = act(c + bias) (bias per column of C,
  // or null).
  Act act = Act::none;
  const float* bias = nullptr;
  // Then a residual added before rounding: y = act(c + bias) + residual (m x n bf16, row stride
  // ldr, 0 for n; or null), as a transformer block's output projections add their input back.
  const std::uint16_t* residual = nullptr;
  std::size_t ldr = 0;
  // The caller's k x n workspace (64-byte aligned) for B's panels, packed once per call when
  // more than 512 rows share them (amx_gemm_b_tiles says when): without it each block of 512 rows
  // packs them again.
  std::uint16_t* b_tiles = nullptr;
  // C written in fp32 here (row stride ldc) instead of bf16 into c (then null): the sums as they
  // are, no epilogue (as a GEMM benchmark's bf16 x bf16 -> fp32).
  float* c_fp32 = nullptr;
};

// Whether a call of m rows packs B once into AmxGemmOptions::b_tiles (given one).
bool amx_gemm_b_tiles(std::size_t m);

// Whether a call of m rows of A (row stride lda) copies A into tile order (the a_tiles workspace),
// rather than reading it in place (one task of rows, rows of whole lines spread over L2's sets).
bool amx_gemm_a_tiles(std::size_t lda, std::size_t m);

// c (m x n, row stride ldc) = a (m x k, row stride lda) b (stored as options.b says, row stride
// ldb), bf16 elements (uint16 bits). a_tiles: the caller's m x k workspace, 64-byte aligned (a
// Buffer), where A is copied into tile order when amx_gemm_a_tiles says so (else unused: may be
// null). A read in place runs at full speed where its rows start on cache lines (a Buffer's do).
// Requires amx_gemm_fits(m, k, n). Threads: OpenMP's; the tasks shrink until every thread has one.
void amx_gemm_bf16(const std::uint16_t* a, std::size_t lda, const std::uint16_t* b, std::size_t ldb, std::uint16_t* c,
                   std::size_t ldc, std::size_t m, std::size_t k, std::size_t n, std::uint16_t* a_tiles,
                   const AmxGemmOptions& options = {});

}  // namespace opmeter::tensor
