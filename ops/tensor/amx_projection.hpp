#pragma once
// A layer's projection y = act(x W^T + bias) [+ residual] in bf16 on opmeter's AMX GEMM
// (amx_gemm.hpp), W as stored (out x in), with the workspaces the GEMM needs: A's tile copy, and
// W's panels packed once per call past 512 rows. One object serves a case's projections of one
// row count (a transformer block's four), sized for the largest.
#include <cstddef>
#include <initializer_list>

#include "opmeter/buffer.hpp"
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

 private:
  std::size_t rows_ = 0;
  Buffer a_tiles_, w_tiles_;
};

}  // namespace opmeter::tensor
