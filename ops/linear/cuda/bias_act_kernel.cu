// Bias and activation passes of the unfused linear: 16-byte vector loads and stores where a row
// (bias) or the whole tensor (activation) starts 16-byte aligned, scalar otherwise; fp32 math,
// one rounding to the storage type per pass; int64 element offsets throughout.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "ops/linear/cuda/bias_act_kernel.hpp"
#include "ops/linear/cuda/linear_act_math.cuh"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::linear {
namespace {
using cuda::narrow;
using cuda::widen;
using tensor::Act;

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 16;  // enough to fill any GPU; the loops stride over the rest

// Elements per 16-byte vector: 4 floats or 8 halves.
template <class T>
__host__ __device__ constexpr int per_vector() {
  return static_cast<int>(sizeof(uint4) / sizeof(T));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

unsigned blocks_for(std::int64_t work, int threads) {
  return static_cast<unsigned>(std::min(kMaxBlocks, std::max<std::int64_t>(1, (work + threads - 1) / threads)));
}

// One block per row (grid-stride over rows), the block's threads across the row's columns. With
// `vectorized` (cols a multiple of the vector width and y 16-byte aligned) every row starts on a
// 16-byte boundary, so whole vectors are loaded and stored.
template <class T>
__global__ void bias_add_kernel(T* __restrict__ y, const float* __restrict__ bias, std::int64_t rows, std::int64_t cols,
                                bool vectorized) {
  constexpr int kPer = per_vector<T>();
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T* row = y + r * cols;
    if (vectorized) {
      auto* rv = reinterpret_cast<uint4*>(row);
      const std::int64_t vectors = cols / kPer;
      for (std::int64_t v = threadIdx.x; v < vectors; v += blockDim.x) {
        uint4 raw = rv[v];
        T* e = reinterpret_cast<T*>(&raw);
        const float* b = bias + v * kPer;
#pragma unroll
        for (int k = 0; k < kPer; ++k) e[k] = narrow<T>(widen(e[k]) + b[k]);
        rv[v] = raw;
      }
    } else {
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) row[j] = narrow<T>(widen(row[j]) + bias[j]);
    }
  }
}

// Grid-stride over `vectors` 16-byte vectors, then the scalar tail from vectors * kPer to n.
template <class T, Act A>
__global__ void activation_kernel(T* __restrict__ y, std::int64_t n, std::int64_t vectors) {
  constexpr int kPer = per_vector<T>();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto* yv = reinterpret_cast<uint4*>(y);
  for (std::int64_t v = first; v < vectors; v += stride) {
    uint4 raw = yv[v];
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int k = 0; k < kPer; ++k) e[k] = narrow<T>(activate<A>(widen(e[k])));
    yv[v] = raw;
  }
  for (std::int64_t i = vectors * kPer + first; i < n; i += stride) y[i] = narrow<T>(activate<A>(widen(y[i])));
}

template <class T>
__global__ void bias_convert_kernel(const float* __restrict__ bias, T* __restrict__ dst, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = narrow<T>(bias[i]);
}

template <class T>
void bias_add(void* y, const float* bias, std::int64_t rows, std::int64_t cols, cudaStream_t s) {
  const bool vectorized = cols % per_vector<T>() == 0 && aligned16(y) && aligned16(bias);
  const std::int64_t per_row = vectorized ? cols / per_vector<T>() : cols;
  // Narrow rows get a narrow block (a warp at least), so few threads idle.
  const int threads = static_cast<int>(std::min<std::int64_t>(kThreads, (per_row + 31) / 32 * 32));
  const auto blocks = static_cast<unsigned>(std::min(kMaxBlocks, std::max<std::int64_t>(1, rows)));
  bias_add_kernel<T><<<blocks, threads, 0, s>>>(static_cast<T*>(y), bias, rows, cols, vectorized);
}

template <class T, Act A>
void activation(void* y, std::int64_t n, cudaStream_t s) {
  const std::int64_t vectors = aligned16(y) ? n / per_vector<T>() : 0;
  activation_kernel<T, A><<<blocks_for(vectors > 0 ? vectors : n, kThreads), kThreads, 0, s>>>(static_cast<T*>(y), n,
                                                                                               vectors);
}

template <class T>
void activation(Act a, void* y, std::int64_t n, cudaStream_t s) {
  switch (a) {
    case Act::none: break;
    case Act::relu: activation<T, Act::relu>(y, n, s); break;
    case Act::relu6: activation<T, Act::relu6>(y, n, s); break;
    case Act::leaky_relu: activation<T, Act::leaky_relu>(y, n, s); break;
    case Act::gelu: activation<T, Act::gelu>(y, n, s); break;
    case Act::gelu_tanh: activation<T, Act::gelu_tanh>(y, n, s); break;
    case Act::silu: activation<T, Act::silu>(y, n, s); break;
    case Act::sigmoid: activation<T, Act::sigmoid>(y, n, s); break;
    case Act::hardswish: activation<T, Act::hardswish>(y, n, s); break;
  }
}

}  // namespace

void launch_bias_add(DType d, void* y, const float* bias, std::int64_t rows, std::int64_t cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  switch (d) {
    case DType::fp16: bias_add<__half>(y, bias, rows, cols, s); break;
    case DType::bf16: bias_add<__nv_bfloat16>(y, bias, rows, cols, s); break;
    default: bias_add<float>(y, bias, rows, cols, s); break;
  }
}

void launch_activation(DType d, Act a, void* y, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  switch (d) {
    case DType::fp16: activation<__half>(a, y, n, s); break;
    case DType::bf16: activation<__nv_bfloat16>(a, y, n, s); break;
    default: activation<float>(a, y, n, s); break;
  }
}

void launch_bias_convert(DType d, const float* bias, void* dst, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  switch (d) {
    case DType::fp16: bias_convert_kernel<__half><<<blocks_for(n, kThreads), kThreads, 0, s>>>(bias, static_cast<__half*>(dst), n); break;
    case DType::bf16:
      bias_convert_kernel<__nv_bfloat16><<<blocks_for(n, kThreads), kThreads, 0, s>>>(bias, static_cast<__nv_bfloat16*>(dst), n);
      break;
    default: break;  // fp32: the spec's bias is used as it is
  }
}

}  // namespace opmeter::linear
