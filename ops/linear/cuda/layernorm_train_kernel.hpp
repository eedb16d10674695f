#pragma once
// LayerNorm for the training step on the device (fp32 / fp16 / bf16 storage, fp32 math, eps
// 1e-5): the forward keeping each row's mean and rstd, and the backward
//   dx = rstd (g dxhat - mean(g dxhat) - xn mean(g dxhat xn)), dgamma = sum_rows dxhat xn,
//   dbeta = sum_rows dxhat, with xn = (x - mean) rstd.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/linear/layernorm_grad_partition.hpp"
#include "opmeter/dtype.hpp"

namespace opmeter::linear {

struct LayerNormTrain {
  const void* x;
  const float* gamma;
  const float* beta;
  float* mean;  // rows
  float* rstd;  // rows
  std::int64_t rows;
  std::int64_t hidden;
};
// xhat = xn gamma + beta, mean and rstd kept.
void launch_layernorm_forward(DType d, const LayerNormTrain& p, void* xhat, cudaStream_t s);
// dx, dgamma and dbeta (each in d) from dxhat. workspace: device memory of
// layernorm_backward_workspace_bytes(p.rows, p.hidden) (ops/linear/layernorm_grad_partition.hpp),
// the fp32 partial sums of dgamma and dbeta.
void launch_layernorm_backward(DType d, const LayerNormTrain& p, const void* dxhat, void* dx, void* dgamma, void* dbeta,
                               void* workspace, cudaStream_t s);

}  // namespace opmeter::linear
