// Elementwise add: a grid-stride loop over 16-byte vectors (4 floats or 8 halves per load and
// store), then a scalar tail.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "ops/add/cuda/add_kernel.hpp"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::add {
namespace {
constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 16;  // enough to fill any GPU; the loop strides over the rest

using cuda::narrow;
using cuda::widen;

template <class T>
__global__ void add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, std::int64_t n) {
  constexpr int kPerVector = sizeof(uint4) / sizeof(T);
  const std::int64_t vectors = n / kPerVector;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto* av = reinterpret_cast<const uint4*>(a);
  const auto* bv = reinterpret_cast<const uint4*>(b);
  auto* cv = reinterpret_cast<uint4*>(c);
  for (std::int64_t v = first; v < vectors; v += stride) {
    const uint4 x = av[v], y = bv[v];
    uint4 z;
    const T* xs = reinterpret_cast<const T*>(&x);
    const T* ys = reinterpret_cast<const T*>(&y);
    T* zs = reinterpret_cast<T*>(&z);
#pragma unroll
    for (int k = 0; k < kPerVector; ++k) zs[k] = narrow<T>(widen(xs[k]) + widen(ys[k]));
    cv[v] = z;
  }
  for (std::int64_t i = vectors * kPerVector + first; i < n; i += stride) c[i] = narrow<T>(widen(a[i]) + widen(b[i]));
}

template <class T>
void launch(const void* a, const void* b, void* c, std::int64_t n, cudaStream_t s) {
  const std::int64_t vectors = n / static_cast<std::int64_t>(sizeof(uint4) / sizeof(T));
  const std::int64_t blocks = std::min(kMaxBlocks, std::max<std::int64_t>(1, (vectors + kThreads - 1) / kThreads));
  add_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                                     static_cast<T*>(c), n);
}

}  // namespace

void launch_add(DType d, const void* a, const void* b, void* c, std::int64_t n, cudaStream_t s) {
  switch (d) {
    case DType::fp16: launch<__half>(a, b, c, n, s); break;
    case DType::bf16: launch<__nv_bfloat16>(a, b, c, n, s); break;
    default: launch<float>(a, b, c, n, s); break;
  }
}

}  // namespace opmeter::add
