#pragma once
// opmeter's elementwise activation kernel: y = act(x) over n elements, fp32 / fp16 / bf16
// storage, fp32 math.
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"
#include "ops/tensor/kernels.hpp"
#include "opmeter/cuda/sm_info.hpp"

namespace opmeter::activation {

// x and y are cudaMalloc'd (16-byte aligned); any n >= 0.
void launch_activation(tensor::Act a, DType d, const void* x, void* y, std::int64_t n, const cuda::SmInfo& sm,
                       cudaStream_t s);

}  // namespace opmeter::activation
