#include "ops/bandwidth/cuda/bandwidth_kernels.hpp"

namespace opmeter::bandwidth {
namespace {

// Grid-stride over float4s, then the last n % 4 elements one by one.
template <class Op4, class Op1>
__device__ void for_each(std::size_t n, Op4 op4, Op1 op1) {
  const std::size_t n4 = n / 4, stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t i = first; i < n4; i += stride) op4(i);
  for (std::size_t i = 4 * n4 + first; i < n; i += stride) op1(i);
}

__global__ void copy(const float* a, float* b, std::size_t n) {
  for_each(n, [&](std::size_t i) { reinterpret_cast<float4*>(b)[i] = reinterpret_cast<const float4*>(a)[i]; },
           [&](std::size_t i) { b[i] = a[i]; });
}

__global__ void scale(const float* a, float* b, float s, std::size_t n) {
  for_each(n,
           [&](std::size_t i) {
             float4 x = reinterpret_cast<const float4*>(a)[i];
             reinterpret_cast<float4*>(b)[i] = make_float4(s * x.x, s * x.y, s * x.z, s * x.w);
           },
           [&](std::size_t i) { b[i] = s * a[i]; });
}

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
  for_each(n,
           [&](std::size_t i) {
             float4 x = reinterpret_cast<const float4*>(a)[i], y = reinterpret_cast<const float4*>(b)[i];
             reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
           },
           [&](std::size_t i) { c[i] = a[i] + b[i]; });
}

__global__ void triad(float* a, const float* b, const float* c, float s, std::size_t n) {
  for_each(n,
           [&](std::size_t i) {
             float4 x = reinterpret_cast<const float4*>(b)[i], y = reinterpret_cast<const float4*>(c)[i];
             reinterpret_cast<float4*>(a)[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
           },
           [&](std::size_t i) { a[i] = b[i] + s * c[i]; });
}

__global__ void read(const float* a, double* partials, std::size_t n) {
  float sum = 0;
  for_each(n,
           [&](std::size_t i) {
             float4 x = reinterpret_cast<const float4*>(a)[i];
             sum += (x.x + x.y) + (x.z + x.w);
           },
           [&](std::size_t i) { sum += a[i]; });
  __shared__ double block_sum[kThreadsPerBlock];  // exact for the small-integer check inputs
  block_sum[threadIdx.x] = sum;
  __syncthreads();
  for (int w = kThreadsPerBlock / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) block_sum[threadIdx.x] += block_sum[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block_sum[0];
}

__global__ void write(float* a, float v, std::size_t n) {
  for_each(n, [&](std::size_t i) { reinterpret_cast<float4*>(a)[i] = make_float4(v, v, v, v); }, [&](std::size_t i) { a[i] = v; });
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
