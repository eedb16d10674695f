#pragma once
// The training step's elementwise passes on the device (fp32 / fp16 / bf16 storage, fp32 math):
// y = act(z) out of place (z kept for the backward) and dz = dy * act'(z).
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/tensor/kernels.hpp"
#include "opmeter/dtype.hpp"

namespace opmeter::linear {

void launch_act_forward(DType d, tensor::Act a, const void* z, void* y, std::int64_t n, cudaStream_t s);
void launch_act_backward(DType d, tensor::Act a, const void* dy, const void* z, void* dz, std::int64_t n, cudaStream_t s);

}  // namespace opmeter::linear
