#pragma once
// int8 weights at decode on integer tensor cores (cuda/quant_weight_only_limbs_sm80.cu): x's 16-bit
// values as two int8 limbs, so that mma.sync m16n8k32 s8 x s8 -> s32 multiplies the stored codes
// as they are, with no decoding. The arithmetic here is plain functions the CPU tests check.
//
// A row's chunk of x (512 k) is scaled by a power of two, 2^(140 - e), e the biased exponent of
// its largest |x| (so |x| < 2^(e - 126) and the scaled |x| < 2^14), rounded to an integer v and
// split as v = 256 hi + lo with lo in [-128, 127] and hi in [-64, 64]. Exact for every bf16
// value within 2^6 of the chunk's largest (fp16, with 3 more significant bits: within 2^3), at
// most half a unit (2^-15 of the largest's power of two) off for the smaller ones: far below the
// output's own rounding to 16 bits. Per chunk and channel the products'
// sums fit 32 bits: |256 sum(hi c) + sum(lo c)| <= 512 (64 x 256 + 128) x 128 < 2^31.
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define OPMETER_LIMBS_HD __host__ __device__
#else
#define OPMETER_LIMBS_HD
#endif

namespace opmeter::linear::gpu_limbs {

inline constexpr int kStepK = 32;  // k of one m16n8k32 step
// Bytes of one step of a staged row: hi limbs (8 bytes a lane group t), then lo.
inline constexpr int kStepBytes = 2 * kStepK;

// The exponent e the scale takes from a chunk's largest |x|, given as the largest of its 16-bit
// values' magnitude bits (bf16 or fp16 bits with the sign cleared: their order is the values'):
// bf16's exponent field, or fp16's rebased to bf16's bias. Clamped so that 2^(140 - e) and
// 2^(e - 140) stay normal floats (a chunk of zeros or of tiny values scales by 2^126).
OPMETER_LIMBS_HD constexpr int scale_exponent(std::uint32_t amax_bits, bool fp16) {
  const int e = fp16 ? static_cast<int>(amax_bits >> 10) + (127 - 15) : static_cast<int>(amax_bits >> 7);
  return e < 14 ? 14 : e;
}
OPMETER_LIMBS_HD inline float float_of_bits(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}
// Whether a chunk's largest magnitude bits are inf or NaN. Its scale is then NaN and its limbs 0
// (scaled by 0), so that the output is not a number, as the reference's is not: scaled by
// 2^(140 - e), an inf would round to INT_MAX and split into garbage, and a NaN to 0.
OPMETER_LIMBS_HD constexpr bool not_finite(std::uint32_t amax_bits, bool fp16) {
  return amax_bits >= (fp16 ? 0x7C00u : 0x7F80u);
}
// 2^(140 - e), the scale of x, and 2^(e - 140), what a chunk's integer sums are multiplied by.
OPMETER_LIMBS_HD inline float scale_up(int e) { return float_of_bits(static_cast<std::uint32_t>(267 - e) << 23); }
OPMETER_LIMBS_HD inline float scale_down(int e) { return float_of_bits(static_cast<std::uint32_t>(e - 13) << 23); }

// v = 256 hi + lo (v the scaled, rounded x: |v| <= 2^14).
struct Limbs {
  int hi = 0, lo = 0;
};
OPMETER_LIMBS_HD constexpr Limbs split(int v) {
  const int hi = (v + 128) >> 8;  // floor: lo = v - 256 hi in [-128, 127]
  return {hi, v - 256 * hi};
}

// Where k (0..31) of a step goes in the staged row's step, as the mma's B fragment wants it: lane
// (g, t) reads b0 = k 4t .. 4t + 3 and b1 = k 16 + 4t .. 16 + 4t + 3, hi then lo, as one 16-byte
// load at 16 t. So k -> byte 16 t + 4 (k / 16) + k % 4 of the hi limbs, + 8 for the lo.
OPMETER_LIMBS_HD constexpr int staged_byte(int k, bool lo) {
  const int t = (k % 16) / 4;
  return 16 * t + (lo ? 8 : 0) + 4 * (k / 16) + k % 4;
}
// A staged row: 512 k as 16 steps of 64 bytes, padded so that rows lie 64 bytes apart modulo 128
// (8 rows x 4 lanes' 16-byte loads, a quarter warp at a time, hit different banks).
inline constexpr int kRowBytes = 16 * kStepBytes + 64;

}  // namespace opmeter::linear::gpu_limbs

#undef OPMETER_LIMBS_HD
