// LayerNorm's training forward and backward: one block per row for the row statistics and dx,
// one thread per column for dgamma and dbeta (coalesced over a row's columns, a loop over rows:
// no atomics). fp32 math, one rounding to the storage type per output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "ops/linear/cuda/layernorm_train_kernel.hpp"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::linear {
namespace {
using cuda::narrow;
using cuda::widen;

constexpr int kThreads = 256;
constexpr float kEps = 1e-5f;  // ops/tensor/kernels.hpp kNormEps

// Sum of v over the block (kThreads threads); every thread gets it.
__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // shared is reused between calls
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kThreads / 32; ++w) total += shared[w];
  return total;
}

template <class T>
__global__ void forward_kernel(const T* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                               float* __restrict__ mean, float* __restrict__ rstd, T* __restrict__ xhat, std::int64_t rows,
                               std::int64_t h) {
  __shared__ float shared[kThreads / 32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * h;
    float s = 0;
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads) s += widen(row[k]);
    const float m = block_sum(s, shared) / float(h);
    float v = 0;
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads) {
      const float d = widen(row[k]) - m;
      v += d * d;
    }
    const float rs = rsqrtf(block_sum(v, shared) / float(h) + kEps);
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads)
      xhat[r * h + k] = narrow<T>((widen(row[k]) - m) * rs * gamma[k] + beta[k]);
  }
}

template <class T>
__global__ void dx_kernel(const T* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ mean,
                          const float* __restrict__ rstd, const T* __restrict__ dxhat, T* __restrict__ dx, std::int64_t rows,
                          std::int64_t h) {
  __shared__ float shared[kThreads / 32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float a = 0, axn = 0;
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads) {
      const float gd = gamma[k] * widen(dxhat[r * h + k]);
      a += gd;
      axn += gd * (widen(x[r * h + k]) - mean[r]) * rstd[r];
    }
    a = block_sum(a, shared) / float(h);
    axn = block_sum(axn, shared) / float(h);
    for (std::int64_t k = threadIdx.x; k < h; k += kThreads) {
      const float xn = (widen(x[r * h + k]) - mean[r]) * rstd[r];
      dx[r * h + k] = narrow<T>(rstd[r] * (gamma[k] * widen(dxhat[r * h + k]) - a - xn * axn));
    }
  }
}

template <class T>
__global__ void dgamma_dbeta_kernel(const T* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
                                    const T* __restrict__ dxhat, T* __restrict__ dgamma, T* __restrict__ dbeta,
                                    std::int64_t rows, std::int64_t h) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < h; k += stride) {
    float g = 0, b = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const float d = widen(dxhat[r * h + k]);
      g += d * (widen(x[r * h + k]) - mean[r]) * rstd[r];
      b += d;
    }
    dgamma[k] = narrow<T>(g);
    dbeta[k] = narrow<T>(b);
  }
}

unsigned row_blocks(std::int64_t rows) { return static_cast<unsigned>(std::min<std::int64_t>(1 << 16, std::max<std::int64_t>(1, rows))); }

template <class T>
void forward(const LayerNormTrain& p, void* xhat, cudaStream_t s) {
  forward_kernel<T><<<row_blocks(p.rows), kThreads, 0, s>>>(static_cast<const T*>(p.x), p.gamma, p.beta, p.mean, p.rstd,
                                                             static_cast<T*>(xhat), p.rows, p.hidden);
}

template <class T>
void backward(const LayerNormTrain& p, const void* dxhat, void* dx, void* dgamma, void* dbeta, cudaStream_t s) {
  const auto* x = static_cast<const T*>(p.x);
  const auto* d = static_cast<const T*>(dxhat);
  dx_kernel<T><<<row_blocks(p.rows), kThreads, 0, s>>>(x, p.gamma, p.mean, p.rstd, d, static_cast<T*>(dx), p.rows, p.hidden);
  const auto blocks = static_cast<unsigned>(std::max<std::int64_t>(1, (p.hidden + kThreads - 1) / kThreads));
  dgamma_dbeta_kernel<T><<<blocks, kThreads, 0, s>>>(x, p.mean, p.rstd, d, static_cast<T*>(dgamma), static_cast<T*>(dbeta),
                                                      p.rows, p.hidden);
}
}  // namespace

void launch_layernorm_forward(DType d, const LayerNormTrain& p, void* xhat, cudaStream_t s) {
  if (p.rows <= 0 || p.hidden <= 0) return;
  switch (d) {
    case DType::fp16: forward<__half>(p, xhat, s); break;
    case DType::bf16: forward<__nv_bfloat16>(p, xhat, s); break;
    default: forward<float>(p, xhat, s); break;
  }
}

void launch_layernorm_backward(DType d, const LayerNormTrain& p, const void* dxhat, void* dx, void* dgamma, void* dbeta,
                               cudaStream_t s) {
  if (p.rows <= 0 || p.hidden <= 0) return;
  switch (d) {
    case DType::fp16: backward<__half>(p, dxhat, dx, dgamma, dbeta, s); break;
    case DType::bf16: backward<__nv_bfloat16>(p, dxhat, dx, dgamma, dbeta, s); break;
    default: backward<float>(p, dxhat, dx, dgamma, dbeta, s); break;
  }
}

}  // namespace opmeter::linear
