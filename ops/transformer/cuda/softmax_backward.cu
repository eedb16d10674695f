// One warp per row (as masked_softmax.cu): a pass summing P dP over the keys the row sees,
// merged across the warp, then a pass writing dS. Scalar loads, coalesced across the warp; a
// grid-stride loop over rows (the grid is capped).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "ops/transformer/cuda/softmax_backward.hpp"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::transformer {
namespace {
constexpr int kRowsPerBlock = 8;  // warps per block
constexpr int kThreads = kRowsPerBlock * 32;
constexpr std::int64_t kMaxBlocks = 1 << 16;

using cuda::narrow;
using cuda::widen;

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_backward(const T* __restrict__ p, const float* __restrict__ dp,
                                                             T* __restrict__ ds, std::int64_t rows, int n, bool causal,
                                                             float scale) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; row < rows;
       row += step) {  // the whole warp takes the same rows
    const int visible = causal ? static_cast<int>(row % n) + 1 : n;
    const T* pr = p + row * n;
    const float* dpr = dp + row * n;
    T* dsr = ds + row * n;
    float dot = 0.0f;
    for (int j = lane; j < visible; j += 32) dot += widen(pr[j]) * dpr[j];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    for (int j = lane; j < n; j += 32)
      dsr[j] = narrow<T>(j < visible ? widen(pr[j]) * (dpr[j] - dot) * scale : 0.0f);
  }
}

template <class T>
void launch(const void* p, const float* dp, void* ds, std::int64_t rows, int n, bool causal, float scale,
            cudaStream_t stream) {
  const auto blocks = std::clamp<std::int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, kMaxBlocks);
  softmax_backward<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const T*>(p), dp, static_cast<T*>(ds), rows, n, causal, scale);
}

}  // namespace

void launch_softmax_backward(DType dtype, const void* p, const float* dp, void* ds, std::int64_t rows, int n, bool causal,
                             float scale, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  switch (dtype) {
    case DType::fp16: launch<__half>(p, dp, ds, rows, n, causal, scale, stream); break;
    case DType::bf16: launch<__nv_bfloat16>(p, dp, ds, rows, n, causal, scale, stream); break;
    default: launch<float>(p, dp, ds, rows, n, causal, scale, stream); break;
  }
}

}  // namespace opmeter::transformer
