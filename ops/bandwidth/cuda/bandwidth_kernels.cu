#include "ops/bandwidth/cuda/bandwidth_kernels.hpp"

namespace opmeter::bandwidth {
namespace {

// Each thread moves kUnroll float4s: all loads are issued before the first store, so several
// 16-byte requests per thread are in flight. The grid covers the arrays (one tile per block; the
// loop only runs again when the grid was capped); the last n % 4 floats are done one by one.
// bench/cuda_copy_variants.cu chose this shape: on an H100, 2 float4s per thread and a full grid
// copy at cudaMemcpy's rate, a persistent grid-stride loop ~5% slower, and streaming (evict-first)
// hints change nothing.
constexpr int kUnroll = kVectorsPerThread;

template <class Load, class Store>
__device__ void for_each(std::size_t n, Load load, Store store) {
  using V = decltype(load(std::size_t{0}));
  const std::size_t n4 = n / 4, tile = static_cast<std::size_t>(blockDim.x) * kUnroll;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * tile;
  for (std::size_t base = blockIdx.x * tile + threadIdx.x; base < n4; base += stride) {
    V v[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      if (base + j * blockDim.x < n4) v[j] = load(base + j * blockDim.x);
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      if (base + j * blockDim.x < n4) store(base + j * blockDim.x, v[j]);
  }
}

// The scalar tail: elements 4 * (n / 4) ... n - 1.
template <class Op1>
__device__ void for_tail(std::size_t n, Op1 op1) {
  const std::size_t first = 4 * (n / 4) + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t i = first; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) op1(i);
}

__device__ float4 ld(const float* p, std::size_t i) { return reinterpret_cast<const float4*>(p)[i]; }
__device__ void st(float* p, std::size_t i, float4 v) { reinterpret_cast<float4*>(p)[i] = v; }

struct Two {
  float4 x, y;
};

__global__ void copy(const float* __restrict__ a, float* __restrict__ b, std::size_t n) {
  for_each(n, [&](std::size_t i) { return ld(a, i); }, [&](std::size_t i, float4 v) { st(b, i, v); });
  for_tail(n, [&](std::size_t i) { b[i] = a[i]; });
}

__global__ void scale(const float* __restrict__ a, float* __restrict__ b, float s, std::size_t n) {
  for_each(n, [&](std::size_t i) { return ld(a, i); },
           [&](std::size_t i, float4 x) { st(b, i, make_float4(s * x.x, s * x.y, s * x.z, s * x.w)); });
  for_tail(n, [&](std::size_t i) { b[i] = s * a[i]; });
}

__global__ void add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, std::size_t n) {
  for_each(n, [&](std::size_t i) { return Two{ld(a, i), ld(b, i)}; },
           [&](std::size_t i, Two v) { st(c, i, make_float4(v.x.x + v.y.x, v.x.y + v.y.y, v.x.z + v.y.z, v.x.w + v.y.w)); });
  for_tail(n, [&](std::size_t i) { c[i] = a[i] + b[i]; });
}

__global__ void triad(float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c, float s, std::size_t n) {
  for_each(n, [&](std::size_t i) { return Two{ld(b, i), ld(c, i)}; },
           [&](std::size_t i, Two v) {
             st(a, i, make_float4(v.x.x + s * v.y.x, v.x.y + s * v.y.y, v.x.z + s * v.y.z, v.x.w + s * v.y.w));
           });
  for_tail(n, [&](std::size_t i) { a[i] = b[i] + s * c[i]; });
}

__global__ void read(const float* __restrict__ a, double* partials, std::size_t n) {
  float sum = 0;
  for_each(n, [&](std::size_t i) { return ld(a, i); }, [&](std::size_t, float4 x) { sum += (x.x + x.y) + (x.z + x.w); });
  for_tail(n, [&](std::size_t i) { sum += a[i]; });
  __shared__ double block_sum[kThreadsPerBlock];  // exact for the small-integer check inputs
  block_sum[threadIdx.x] = sum;
  __syncthreads();
  for (int w = kThreadsPerBlock / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) block_sum[threadIdx.x] += block_sum[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block_sum[0];
}

__global__ void write(float* __restrict__ a, float v, std::size_t n) {
  for_each(n, [&](std::size_t) { return make_float4(v, v, v, v); }, [&](std::size_t i, float4 x) { st(a, i, x); });
  for_tail(n, [&](std::size_t i) { a[i] = v; });
}

}  // namespace

void launch_copy(const float* a, float* b, std::size_t n, int blocks, cudaStream_t s) { copy<<<blocks, kThreadsPerBlock, 0, s>>>(a, b, n); }
void launch_scale(const float* a, float* b, float scalar, std::size_t n, int blocks, cudaStream_t s) {
  scale<<<blocks, kThreadsPerBlock, 0, s>>>(a, b, scalar, n);
}
void launch_add(const float* a, const float* b, float* c, std::size_t n, int blocks, cudaStream_t s) {
  add<<<blocks, kThreadsPerBlock, 0, s>>>(a, b, c, n);
}
void launch_triad(float* a, const float* b, const float* c, float scalar, std::size_t n, int blocks, cudaStream_t s) {
  triad<<<blocks, kThreadsPerBlock, 0, s>>>(a, b, c, scalar, n);
}
void launch_read(const float* a, double* partials, std::size_t n, int blocks, cudaStream_t s) {
  read<<<blocks, kThreadsPerBlock, 0, s>>>(a, partials, n);
}
void launch_write(float* a, float value, std::size_t n, int blocks, cudaStream_t s) { write<<<blocks, kThreadsPerBlock, 0, s>>>(a, value, n); }

}  // namespace opmeter::bandwidth
