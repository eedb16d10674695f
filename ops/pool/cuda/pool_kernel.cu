// pool2d kernels: windows (a thread per output) and global average (a warp per plane).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "ops/pool/cuda/pool_kernel.hpp"
#include "opmeter/cuda/float_convert.cuh"
#include "opmeter/cuda/reduce.cuh"

namespace opmeter::pool {
namespace {
constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 16;  // enough to fill any GPU; the loops stride over the rest

using cuda::narrow;
using cuda::widen;

__device__ __forceinline__ std::int64_t lo_clip(std::int64_t v) { return v < 0 ? 0 : v; }
__device__ __forceinline__ std::int64_t hi_clip(std::int64_t v, std::int64_t h) { return v > h ? h : v; }

template <class T>
__global__ void pool_kernel(const T* __restrict__ x, T* __restrict__ y, PoolGeometry g) {
  const std::int64_t outputs = g.planes * g.oh * g.oh;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const float scale = 1.0f / static_cast<float>(g.k * g.k);
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += stride) {
    const std::int64_t j = o % g.oh, i = (o / g.oh) % g.oh, plane = o / (g.oh * g.oh);
    const std::int64_t h0 = lo_clip(i * g.stride - g.pad), h1 = hi_clip(i * g.stride - g.pad + g.k, g.h);
    const std::int64_t w0 = lo_clip(j * g.stride - g.pad), w1 = hi_clip(j * g.stride - g.pad + g.k, g.h);
    const T* in = x + plane * g.h * g.h;
    float acc = g.is_max ? __int_as_float(0xff800000) : 0.0f;  // -inf: every window holds an element
    for (std::int64_t r = h0; r < h1; ++r)
      for (std::int64_t q = w0; q < w1; ++q) {
        const float v = widen(in[r * g.h + q]);
        acc = g.is_max ? fmaxf(acc, v) : acc + v;
      }
    y[o] = narrow<T>(g.is_max ? acc : acc * scale);
  }
}

template <class T>
__global__ void global_avg_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t planes, std::int64_t hw) {
  constexpr int kWarps = kThreads / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * kWarps;
  const float scale = 1.0f / static_cast<float>(hw);
  // Every lane of a warp takes the same planes, so the full-mask shuffles see all 32 lanes.
  for (std::int64_t p = first; p < planes; p += step) {
    const T* plane = x + p * hw;
    float acc = 0;
    for (std::int64_t i = lane; i < hw; i += 32) acc += widen(plane[i]);
    acc = cuda::group_reduce<32>(acc, cuda::SumOp{});
    if (lane == 0) y[p] = narrow<T>(acc * scale);
  }
}

std::int64_t blocks_for(std::int64_t work_items, std::int64_t per_block) {
  return std::min(kMaxBlocks, std::max<std::int64_t>(1, (work_items + per_block - 1) / per_block));
}

template <class T>
void pool(const PoolGeometry& g, const void* x, void* y, cudaStream_t s) {
  const auto blocks = blocks_for(g.planes * g.oh * g.oh, kThreads);
  pool_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), g);
}

template <class T>
void global_avg(std::int64_t planes, std::int64_t hw, const void* x, void* y, cudaStream_t s) {
  const auto blocks = blocks_for(planes, kThreads / 32);
  global_avg_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                          planes, hw);
}

}  // namespace

void launch_pool(DType d, const PoolGeometry& g, const void* x, void* y, cudaStream_t s) {
  switch (d) {
    case DType::fp16: pool<__half>(g, x, y, s); break;
    case DType::bf16: pool<__nv_bfloat16>(g, x, y, s); break;
    default: pool<float>(g, x, y, s); break;
  }
}

void launch_global_avg(DType d, std::int64_t planes, std::int64_t hw, const void* x, void* y, cudaStream_t s) {
  switch (d) {
    case DType::fp16: global_avg<__half>(planes, hw, x, y, s); break;
    case DType::bf16: global_avg<__nv_bfloat16>(planes, hw, x, y, s); break;
    default: global_avg<float>(planes, hw, x, y, s); break;
  }
}

}  // namespace opmeter::pool
