#pragma once
// The unfused conv's elementwise passes over y (NCHW, in place; fp32 / fp16 / bf16 storage, fp32
// math), each one kernel that reads and rewrites y, as an unfused framework's layers do:
//   y = act(BN(y + bias[c]))   with any of bias, BN and act left out.
// Built into the cuDNN module (its own CUDA runtime, so its launches are checked there).
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::conv {

struct ChannelPass {
  const float* bias = nullptr;  // per channel; nullptr: none
  // BatchNorm inference per channel, (y - mean) * gamma / sqrt(var + eps) + beta; mean nullptr: none.
  const float* mean = nullptr;
  const float* var = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  tensor::Act act = tensor::Act::none;
};

// One pass over y of images x channels x plane elements; `sms` sizes the grid. Nothing is
// enqueued when the pass has nothing to do. Throws std::runtime_error on a launch error.
void launch_channel_pass(DType d, void* y, const ChannelPass& p, std::int64_t images, std::int64_t channels,
                         std::int64_t plane, int sms, cudaStream_t s);

}  // namespace opmeter::conv
