#pragma once
// A projection's backward GEMMs on the CPU, for the training steps of linear and
// transformer_block (impls `onednn_train`): dA = dZ W and dW = dZ^T A, with A rows x k, W n x k
// (as stored: z = A W^T), dZ rows x n. In bf16 oneDNN 2.6's AMX matmul is slow on two of these
// operands as stored: it copies a row-major W for dZ W into its AMX layout (and its own reorder
// to that layout) several times slower than a memcpy, and it reads dZ transposed slowly. So where
// oneDNN picks the AMX layout for dZ W:
//   - W is packed by opmeter into that layout (pack_amx_bf16, at memcpy speed) at every call (W
//     changes at every optimizer step: a real step pays for it too), and dZ W runs in column slabs
//     whose part of W fits the L2 cache (PackedSlabMatmul);
// and in bf16 dW = dZ^T A runs on transposed copies of dZ and A (oneDNN reorders), the fast case.
// Where the CPU has AMX-BF16 and every size is a multiple of 32, both products run on opmeter's
// own AMX GEMM instead (amx_gemm.hpp: B's panels packed as it runs, so W is not copied whole;
// dW = dZ^T A reads A as stored and only dZ is transposed), 1.3-1.4x faster than the oneDNN paths
// above on 512 x 4096 x 4096 (docs/BENCHMARKS.md).
// fp32 keeps the matmuls on the operands as stored.
#include <map>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "opmeter/buffer.hpp"
#include "opmeter/dtype.hpp"
#include "ops/tensor/onednn_pack.hpp"

namespace opmeter::tensor {

class ProjectionBackward {
 public:
  // amx: whether opmeter's AMX GEMM may run the products (false: oneDNN's paths, as a reference).
  void prepare(std::size_t rows, std::size_t k, std::size_t n, DType dtype, bool amx = true);
  void data(const void* dz, const void* w, void* da);     // dA = dZ W
  void weights(const void* dz, const void* a, void* dw);  // dW = dZ^T A
  // How it runs: dx_weights, dw_operands, and oneDNN's kernels (onednn_impl).
  std::map<std::string, std::string> details() const;

 private:
  void transpose(dnnl::reorder& r, const dnnl::memory::desc& from, const void* src, Buffer& to);  // into to, timed
  std::size_t rows_ = 0, k_ = 0, n_ = 0;
  bool amx_ = false, packed_w_ = false, transposed_ = false;
  dnnl::memory::desc dz_md_, w_md_, a_md_, dzt_md_, at_md_, dw_md_;
  dnnl::matmul data_, weights_;
  dnnl::reorder transpose_dz_, transpose_a_;
  PackedSlabMatmul slabs_;
  Buffer w_packed_, dz_t_, a_t_;
  Buffer a_tiles_, b_tiles_;  // the AMX GEMM's A in tile order (rows x n: both products), B's panels
  std::string impls_;
};

}  // namespace opmeter::tensor
