// Activations: one pass over memory. Each thread has kUnroll 16-byte loads in flight before it
// computes (enough bytes in flight per SM to cover memory latency), the grid is a few waves of
// resident blocks striding over the rest, and a scalar tail takes the last n % 16-byte elements.
// Transcendentals use the fast exp (ex2.approx) and fast division: their error (a few fp32 ulp over
// -8..8) is far inside the ops' tolerance of 64 * 2^-24 on |y - ref| / (|ref| + 1).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "ops/activation/cuda/activation_kernels.hpp"
#include "opmeter/cuda/vector_io.cuh"

namespace opmeter::activation {
namespace {
using tensor::Act;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;
constexpr int kBlocksPerSm = 2048 / kThreads;  // resident blocks of kThreads on sm80..sm90

// x / (1 + exp(-z)) with the exponent clamped so that the denominator stays finite (2^126 at most:
// __fdividef's range); at the clamp the result is x * e^-80, i.e. 0 in fp32 for |x| <= 8.
__device__ __forceinline__ float over_one_plus_exp(float x, float minus_z) {
  return __fdividef(x, 1.0f + __expf(fminf(minus_z, 80.0f)));
}

template <Act A>
__device__ __forceinline__ float apply(float x) {
  if constexpr (A == Act::relu) return fmaxf(x, 0.0f);
  else if constexpr (A == Act::relu6) return fminf(fmaxf(x, 0.0f), 6.0f);
  else if constexpr (A == Act::leaky_relu) return x > 0.0f ? x : tensor::kLeakySlope * x;
  // erf form: 2-ulp erff keeps the tail (x -> -8, where 1 + erf cancels) within tolerance.
  else if constexpr (A == Act::gelu) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  // 0.5 x (1 + tanh u) = x / (1 + exp(-2u)): one fast exp instead of tanhf.
  else if constexpr (A == Act::gelu_tanh) {
    const float u = 0.79788456080286536f * fmaf(0.044715f * x, x * x, x);
    return over_one_plus_exp(x, -2.0f * u);
  } else if constexpr (A == Act::silu) return over_one_plus_exp(x, -x);
  else if constexpr (A == Act::sigmoid) return over_one_plus_exp(1.0f, -x);
  else if constexpr (A == Act::hardswish) return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
  else return x;
}

template <Act A, class T>
__global__ void __launch_bounds__(kThreads) activation_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n) {
  constexpr int W = cuda::kVec16<T>;
  const std::int64_t vectors = n / W;
  const std::int64_t chunk = static_cast<std::int64_t>(kThreads) * kUnroll;
  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * chunk + threadIdx.x; base < vectors;
       base += static_cast<std::int64_t>(gridDim.x) * chunk) {
    cuda::Raw<T, W> raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = base + static_cast<std::int64_t>(u) * kThreads;
      if (v < vectors) raw[u] = cuda::load_raw<T, W>(x + v * W);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = base + static_cast<std::int64_t>(u) * kThreads;
      if (v >= vectors) continue;
      float f[W];
      cuda::raw_to_floats<T, W>(raw[u], f);
#pragma unroll
      for (int k = 0; k < W; ++k) f[k] = apply<A>(f[k]);
      cuda::store_floats<T, W>(y + v * W, f);
    }
  }
  // The tail: fewer than W elements, taken by the first threads of the grid.
  const std::int64_t t = vectors * W + static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t < n) y[t] = cuda::narrow<T>(apply<A>(cuda::widen(x[t])));
}

template <Act A, class T>
void launch_typed(const void* x, void* y, std::int64_t n, const cuda::SmInfo& sm, cudaStream_t s) {
  const std::int64_t vectors = n / cuda::kVec16<T>;
  const std::int64_t needed = std::max<std::int64_t>(1, (vectors + kThreads * kUnroll - 1) / (kThreads * kUnroll));
  const std::int64_t blocks = std::min<std::int64_t>(needed, std::int64_t{sm.sms} * kBlocksPerSm);
  activation_kernel<A, T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
}

template <class T>
void launch_act(Act a, const void* x, void* y, std::int64_t n, const cuda::SmInfo& sm, cudaStream_t s) {
  switch (a) {
    case Act::relu: return launch_typed<Act::relu, T>(x, y, n, sm, s);
    case Act::relu6: return launch_typed<Act::relu6, T>(x, y, n, sm, s);
    case Act::leaky_relu: return launch_typed<Act::leaky_relu, T>(x, y, n, sm, s);
    case Act::gelu: return launch_typed<Act::gelu, T>(x, y, n, sm, s);
    case Act::gelu_tanh: return launch_typed<Act::gelu_tanh, T>(x, y, n, sm, s);
    case Act::silu: return launch_typed<Act::silu, T>(x, y, n, sm, s);
    case Act::sigmoid: return launch_typed<Act::sigmoid, T>(x, y, n, sm, s);
    case Act::hardswish: return launch_typed<Act::hardswish, T>(x, y, n, sm, s);
    case Act::none: return launch_typed<Act::none, T>(x, y, n, sm, s);
  }
}

}  // namespace

void launch_activation(Act a, DType d, const void* x, void* y, std::int64_t n, const cuda::SmInfo& sm, cudaStream_t s) {
  switch (d) {
    case DType::fp16: return launch_act<__half>(a, x, y, n, sm, s);
    case DType::bf16: return launch_act<__nv_bfloat16>(a, x, y, n, sm, s);
    default: return launch_act<float>(a, x, y, n, sm, s);
  }
}

}  // namespace opmeter::activation
