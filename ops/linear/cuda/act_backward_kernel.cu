// The training step's elementwise passes: y = act(z) and dz = dy * act'(z), grid-stride, scalar
// loads (both passes are a small part of a step next to its three GEMMs), fp32 math with the
// reference's formulas (ops/activation/activation.cpp, derivative()).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "ops/linear/cuda/act_backward_kernel.hpp"
#include "ops/linear/cuda/linear_act_math.cuh"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::linear {
namespace {
using cuda::narrow;
using cuda::widen;
using tensor::Act;

constexpr int kThreads = 256;

template <Act A>
__device__ inline float activate_grad(float x) {
  if constexpr (A == Act::relu) {
    return x > 0.f ? 1.f : 0.f;
  } else if constexpr (A == Act::relu6) {
    return x > 0.f && x < 6.f ? 1.f : 0.f;
  } else if constexpr (A == Act::leaky_relu) {
    return x > 0.f ? 1.f : tensor::kLeakySlope;
  } else if constexpr (A == Act::gelu) {
    return 0.5f * erfcf(-x * 0.70710678118654752f) + x * expf(-0.5f * x * x) * 0.39894228040143268f;
  } else if constexpr (A == Act::gelu_tanh) {
    // sigmoid forms of 0.5 (1 + tanh u) and 1 - tanh^2 u: taken from t they lose their digits
    // where tanh saturates (as ops/tensor/vec_math.inc says).
    const float c = 0.79788456080286536f, u2 = 2.f * c * (x + 0.044715f * x * x * x);
    const float s = 1.f / (1.f + expf(-u2)), s_neg = 1.f / (1.f + expf(u2));
    return s + 2.f * x * s * s_neg * c * (1.f + 3.f * 0.044715f * x * x);
  } else if constexpr (A == Act::silu) {
    const float s = 1.f / (1.f + expf(-x));
    return s * (1.f + x * (1.f - s));
  } else if constexpr (A == Act::sigmoid) {
    const float s = 1.f / (1.f + expf(-x));
    return s * (1.f - s);
  } else if constexpr (A == Act::hardswish) {
    return x < -3.f ? 0.f : x > 3.f ? 1.f : (2.f * x + 3.f) / 6.f;
  } else {
    return 1.f;
  }
}

template <class T, Act A>
__global__ void act_forward_kernel(const T* __restrict__ z, T* __restrict__ y, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = narrow<T>(activate<A>(widen(z[i])));
}

template <class T, Act A>
__global__ void act_backward_kernel(const T* __restrict__ dy, const T* __restrict__ z, T* __restrict__ dz, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dz[i] = narrow<T>(widen(dy[i]) * activate_grad<A>(widen(z[i])));
}

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>(1 << 16, std::max<std::int64_t>(1, (n + kThreads - 1) / kThreads)));
}

template <class T, Act A>
void both(bool backward, const void* dy, const void* z, void* out, std::int64_t n, cudaStream_t s) {
  if (backward)
    act_backward_kernel<T, A><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(dy), static_cast<const T*>(z),
                                                                 static_cast<T*>(out), n);
  else
    act_forward_kernel<T, A><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(z), static_cast<T*>(out), n);
}

template <class T>
void dispatch(Act a, bool backward, const void* dy, const void* z, void* out, std::int64_t n, cudaStream_t s) {
  switch (a) {
    case Act::none: both<T, Act::none>(backward, dy, z, out, n, s); break;
    case Act::relu: both<T, Act::relu>(backward, dy, z, out, n, s); break;
    case Act::relu6: both<T, Act::relu6>(backward, dy, z, out, n, s); break;
    case Act::leaky_relu: both<T, Act::leaky_relu>(backward, dy, z, out, n, s); break;
    case Act::gelu: both<T, Act::gelu>(backward, dy, z, out, n, s); break;
    case Act::gelu_tanh: both<T, Act::gelu_tanh>(backward, dy, z, out, n, s); break;
    case Act::silu: both<T, Act::silu>(backward, dy, z, out, n, s); break;
    case Act::sigmoid: both<T, Act::sigmoid>(backward, dy, z, out, n, s); break;
    case Act::hardswish: both<T, Act::hardswish>(backward, dy, z, out, n, s); break;
  }
}

void launch(DType d, Act a, bool backward, const void* dy, const void* z, void* out, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  switch (d) {
    case DType::fp16: dispatch<__half>(a, backward, dy, z, out, n, s); break;
    case DType::bf16: dispatch<__nv_bfloat16>(a, backward, dy, z, out, n, s); break;
    default: dispatch<float>(a, backward, dy, z, out, n, s); break;
  }
}
}  // namespace

void launch_act_forward(DType d, Act a, const void* z, void* y, std::int64_t n, cudaStream_t s) {
  launch(d, a, false, nullptr, z, y, n, s);
}

void launch_act_backward(DType d, Act a, const void* dy, const void* z, void* dz, std::int64_t n, cudaStream_t s) {
  launch(d, a, true, dy, z, dz, n, s);
}

}  // namespace opmeter::linear
