#pragma once
// The activations on the device, in fp32, with the formulas of the fp64 reference
// (ops/activation/activation.cpp): accurate erfcf / tanhf / expf, never their fast intrinsics.
#include "ops/tensor/kernels.hpp"

namespace opmeter::linear {

template <tensor::Act A>
__device__ inline float activate(float x) {
  using tensor::Act;
  if constexpr (A == Act::relu) {
    return x > 0.f ? x : 0.f;
  } else if constexpr (A == Act::relu6) {
    return fminf(fmaxf(x, 0.f), 6.f);
  } else if constexpr (A == Act::leaky_relu) {
    return x > 0.f ? x : tensor::kLeakySlope * x;
  } else if constexpr (A == Act::gelu) {
    return 0.5f * x * erfcf(-x * 0.70710678118654752f);  // 0.5 x (1 + erf(x / sqrt 2))
  } else if constexpr (A == Act::gelu_tanh) {
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);  // sqrt(2 / pi) (x + 0.044715 x^3)
    return 0.5f * x * (1.f + tanhf(u));
  } else if constexpr (A == Act::silu) {
    return x / (1.f + expf(-x));  // x -> -inf: x / inf = -0, as the reference
  } else if constexpr (A == Act::sigmoid) {
    return 1.f / (1.f + expf(-x));
  } else if constexpr (A == Act::hardswish) {
    return x * fminf(fmaxf(x + 3.f, 0.f), 6.f) / 6.f;
  } else {
    return x;
  }
}

}  // namespace opmeter::linear
