#pragma once
// A layer's projection y = act(x W^T + bias) [+ residual] in bf16 on opmeter's AMX GEMM
// (amx_gemm.hpp), W as stored (out x in), with the workspaces the GEMM needs: A's tile copy, and
// W's panels packed once per call past 512 rows. One object serves a case's projections of one
// row count (a transformer block's four), sized for the largest.
#include <cstddef>
#include <initializer_list>

#include "opmeter/buffer.hpp"
#include "ops/tensor/amx_gemm.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::tensor {

class AmxProjection {
 public:
  // Whether it runs here (AMX-BF16 granted) for these sizes: each a multiple of 32.
  static bool fits(std::size_t rows, std::size_t in, std::size_t out);
  // Workspaces for `rows` rows, projections of these input widths and up to max_weights weights.
  void prepare(std::size_t rows, std::initializer_list<std::size_t> ins, std::size_t max_weights);
  // x: rows x in, w: out x in, y: rows x out, residual: rows x out or null (bf16 bits, rows packed);
  // bias: out floats or null.
  void run(const void* x, const void* w, const float* bias, void* y, std::size_t in, std::size_t out, Act act = Act::none,
           const void* residual = nullptr);
  // y = x W^T in fp32 (the gemm op's bf16 x bf16 -> fp32): no epilogue.
  void run_fp32(const void* x, const void* w, float* y, std::size_t in, std::size_t out);

 private:
  void gemm(const void* x, const void* w, std::size_t in, std::size_t out, void* y, const AmxGemmOptions& options);
  std::size_t rows_ = 0;
  Buffer a_tiles_, w_tiles_;
};

}  // namespace opmeter::tensor
