#pragma once
// The scale dynamic scaling gives a tensor from its amax (every int8 / float8 recipe and the
// float8 training step), and the float8 formats of a training step: shared by the device's
// kernels (C++17, no opmeter headers), quant/quantize.cpp and fp8_train_plan.hpp.
#if defined(__CUDACC__)
#define OPMETER_FP8_HD __host__ __device__
#else
#define OPMETER_FP8_HD
#endif

namespace opmeter::linear {

// The dequantization scale of a tensor (or of one row) whose largest magnitude is amax: amax
// lands on the codes' largest value code_max (127 for int8, 448 for e4m3, 57344 for e5m2;
// torchao's dynamic scaling), value = code * scale. The float quotient is correctly rounded, so
// it equals float(double(amax) / code_max). 1 where amax is 0 (any scale represents zeros) or not
// finite (the inf / NaN reaches the output and the check names it).
OPMETER_FP8_HD inline float scale_from_amax(float amax, float code_max) {
  return amax > 0.0f && amax <= 3.402823466e38f ? amax / code_max : 1.0f;
}

namespace fp8_train {

// e4m3 for the forward's x and W, e5m2 for the gradient dz (wider range, one mantissa bit less).
enum class Format { e4m3, e5m2 };
inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE5m2Max = 57344.0f;

}  // namespace fp8_train
}  // namespace opmeter::linear
