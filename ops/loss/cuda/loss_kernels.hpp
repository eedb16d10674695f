#pragma once
// opmeter's loss kernels: mse and cross_entropy with mean reduction, fp32 / fp16 / bf16 inputs,
// fp32 accumulation. The reduction across the tensor is deterministic: each block writes one fp32
// partial sum, then one block adds the partials in a fixed order (in fp64) and writes the mean.
// No atomics: the same inputs and GPU give the same bits every call.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "opmeter/dtype.hpp"
#include "opmeter/cuda/sm_info.hpp"

namespace opmeter::loss {

struct LossArgs {
  const void* a = nullptr;              // mse: pred; cross_entropy: logits
  const void* b = nullptr;              // mse: target; cross_entropy: labels (int32)
  float* partials = nullptr;            // plan.grid floats
  float* out = nullptr;                 // one float
  std::int64_t rows = 0;                // mse: elements
  int hidden = 1;                       // cross_entropy: classes
};

struct LossPlan {
  void (*kernel)(LossArgs) = nullptr;   // the partial sums
  unsigned grid = 1;
  unsigned threads = 256;
  double count = 1;                     // the mean's divisor
  std::string shape;                    // for the result's details
};

// mse over n elements (LossArgs.rows = n); cross_entropy over rows x hidden. Throws
// std::runtime_error on a CUDA error.
LossPlan plan_mse(DType d, std::int64_t n, const cuda::SmInfo& sm);
LossPlan plan_cross_entropy(DType d, std::int64_t rows, int hidden, const cuda::SmInfo& sm);
// The partials kernel, then the final block.
void launch_loss(const LossPlan& plan, const LossArgs& args, cudaStream_t s);

}  // namespace opmeter::loss
