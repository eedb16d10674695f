#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opmeter {

// Element types an op can be measured in. Mixed-precision ops name their input type
// (bf16 GEMM = bf16 inputs, fp32 accumulation; int8 GEMM = u8 x s8 -> s32).
enum class DType { fp64, fp32, tf32, fp16, bf16, fp8_e4m3, int8 };

std::string_view to_string(DType d);
std::optional<DType> parse_dtype(std::string_view name);
const std::vector<DType>& all_dtypes();
std::size_t size_of(DType d);  // bytes of one input element

// Host conversions of the narrow float types, bit-exact with the GPU's: round to nearest even;
// fp16 overflows to inf, fp8 e4m3 (no inf) saturates to +-448; NaN stays NaN.
// bf16 is inline: elementwise kernels convert it in loops the compiler vectorizes. (memcpy, not
// std::bit_cast: CUDA sources including this header are C++17.)
inline std::uint16_t to_bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>(bits >> 16);
}
inline float from_bf16(std::uint16_t x) {
  std::uint32_t bits = static_cast<std::uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
std::uint16_t to_fp16(float x);
float from_fp16(std::uint16_t x);
std::uint8_t to_fp8_e4m3(float x);
float from_fp8_e4m3(std::uint8_t x);

}  // namespace opmeter
