#pragma once
// conv2d's depthwise kernels on the GPU (impl `cuda`, conv_depthwise_cuda.cpp), NCHW, fp32 /
// fp16 / bf16 storage with fp32 accumulation, bias and activation fused.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "opmeter/dtype.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::conv {

struct DepthwiseArgs {
  const void* x;      // [n][c][h][h], the case's dtype
  const float* w;     // [c][r][r], fp32, BatchNorm folded in
  const float* bias;  // [c], fp32, BatchNorm folded in
  void* y;            // [n][c][oh][oh], the case's dtype
  std::int64_t n, c, h, r, stride, pad, oh;
  tensor::Act act;
};

// The kernel a shape takes: a plane tile staged in shared memory with its halo (32x32 outputs,
// or 8x8 for small images and where the big tile's staging does not fit), else one thread per
// output reading global memory (any kernel and stride, slower).
enum class DepthwisePath { tile32, tile8, direct };
DepthwisePath depthwise_path(const DepthwiseArgs& a);
const char* to_string(DepthwisePath p);

// Enqueues the convolution on `s`; the caller checks the launch (cudaGetLastError).
void launch_depthwise(DType d, const DepthwiseArgs& a, cudaStream_t s);

}  // namespace opmeter::conv
