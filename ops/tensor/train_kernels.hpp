#pragma once
// The training steps' own (non-GEMM) pieces on the CPU, shared by the `onednn_train` impls of
// linear / ln_linear_<act> and transformer_block: elements of the activations' type read and
// written as fp32, the activations' derivative, column sums (bias gradients), LayerNorm's forward
// keeping mean and rstd, and its backward. Plain loops, OpenMP over rows or columns.
#include <cstddef>
#include <cstdint>

#include "opmeter/dtype.hpp"
#include "ops/tensor/kernels.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::tensor {

// Elements of the activations' type (bf16 or fp32) read and written as fp32.
struct Elems {
  bool bf16;
  float get(const void* p, std::size_t i) const {
    return bf16 ? from_bf16(static_cast<const std::uint16_t*>(p)[i]) : static_cast<const float*>(p)[i];
  }
  void set(void* p, std::size_t i, float v) const {
    if (bf16)
      static_cast<std::uint16_t*>(p)[i] = to_bf16(v);
    else
      static_cast<float*>(p)[i] = v;
  }
};

// dz = dy * act'(z) over n elements.
void act_backward(Elems e, Act a, const void* dy, const void* z, void* dz, std::size_t n);

// db[j] = sum over rows of d[r][j] (rows x cols), each thread a block of columns.
void column_sums(Elems e, const void* d, std::size_t rows, std::size_t cols, void* db);

// xhat = (x - mean) rstd gamma + beta per row (rows x h), keeping each row's mean and rstd.
void layernorm_forward(Elems e, const void* x, const float* gamma, const float* beta, std::size_t rows, std::size_t h,
                       void* xhat, float* mean, float* rstd);

// LayerNorm's backward from dxhat: dx = rstd (g dxhat - mean(g dxhat) - xn mean(g dxhat xn))
// [+ add, a residual branch's gradient, where not null]; dgamma = sum_rows dxhat xn and
// dbeta = sum_rows dxhat, written in the activations' type.
void layernorm_backward(Elems e, const void* x, const float* gamma, const float* mean, const float* rstd,
                        const void* dxhat, const void* add, std::size_t rows, std::size_t h, void* dx, void* dgamma,
                        void* dbeta);

// The oneDNN descriptors of one layer's three training GEMMs, z = a W^T (rows x k by W stored
// n x k), da = dz W and dW = dz^T a, in the activations' type (bias fp32, 1 x n).
struct TrainGemmDescs {
  TrainGemmDescs(std::size_t rows, std::size_t k, std::size_t n, DType dtype);
  dnnl::memory::desc a;    // rows x k
  dnnl::memory::desc wt;   // W seen as k x n
  dnnl::memory::desc z;    // rows x n
  dnnl::memory::desc bias; // 1 x n, fp32
  dnnl::memory::desc w;    // W as stored, n x k
  dnnl::memory::desc dzt;  // dz read transposed, n x rows
  dnnl::memory::desc dw;   // n x k
};

}  // namespace opmeter::tensor
