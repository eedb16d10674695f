#pragma once
// The float8 formats of a training step and the scale dynamic scaling gives a tensor: shared by
// the device's kernels (C++17, no opmeter headers) and fp8_train_plan.hpp.
#if defined(__CUDACC__)
#define OPMETER_FP8_HD __host__ __device__
#else
#define OPMETER_FP8_HD
#endif

namespace opmeter::linear::fp8_train {

// e4m3 for the forward's x and W, e5m2 for the gradient dz (wider range, one mantissa bit less).
enum class Format { e4m3, e5m2 };
inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE5m2Max = 57344.0f;

// The dequantization scale of a tensor (or of one row) whose largest magnitude is amax: amax
// lands on the format's largest finite value (torchao's dynamic scaling), value = code * scale.
// 1 where amax is 0 (nothing to scale) or not finite (the inf / NaN reaches the output and the
// check names it).
OPMETER_FP8_HD inline float scale_from_amax(float amax, float max_finite) {
  return amax > 0.0f && amax <= 3.402823466e38f ? amax / max_finite : 1.0f;
}

}  // namespace opmeter::linear::fp8_train
