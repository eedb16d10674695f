#include "opmeter/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <utility>

namespace opmeter {
namespace {
constexpr std::array<std::pair<DType, std::string_view>, 7> kNames{{
    {DType::fp64, "fp64"}, {DType::fp32, "fp32"}, {DType::tf32, "tf32"}, {DType::fp16, "fp16"},
    {DType::bf16, "bf16"}, {DType::fp8_e4m3, "fp8"}, {DType::int8, "int8"},
}};
}  // namespace

std::string_view to_string(DType d) {
  for (auto& [t, n] : kNames)
    if (t == d) return n;
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (auto& [t, n] : kNames)
    if (n == name) return t;
  return std::nullopt;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = [] {
    std::vector<DType> v;
    for (auto& [t, n] : kNames) v.push_back(t);
    return v;
  }();
  return all;
}

std::size_t size_of(DType d) {
  switch (d) {
    case DType::fp64: return 8;
    case DType::fp32: case DType::tf32: return 4;
    case DType::fp16: case DType::bf16: return 2;
    case DType::fp8_e4m3: case DType::int8: return 1;
  }
  return 0;
}

std::uint16_t to_fp16(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  const std::uint32_t abs = bits & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;    // NaN
  if (abs >= 0x477ff000) return sign | 0x7c00;   // 65520 and above round to inf
  if (abs < 0x38800000) {                        // below 2^-14: a subnormal, in units of 2^-24
    float units = std::nearbyint(std::bit_cast<float>(abs) * 0x1p24f);  // exact scaling, then RNE
    return sign | static_cast<std::uint16_t>(units);
  }
  std::uint32_t h = ((abs >> 23) - 127 + 15) << 10 | ((abs >> 13) & 0x3ff);
  const std::uint32_t rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry moves into the exponent, as it should
  return sign | static_cast<std::uint16_t>(h);
}

float from_fp16(std::uint16_t x) {
  const std::uint32_t sign = static_cast<std::uint32_t>(x & 0x8000) << 16, e = (x >> 10) & 0x1f, m = x & 0x3ff;
  if (e == 0) return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(static_cast<float>(m) * 0x1p-24f));
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000 | m << 13);
  return std::bit_cast<float>(sign | (e + 112) << 23 | m << 13);
}

std::uint8_t to_fp8_e4m3(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80);
  const std::uint32_t abs = bits & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7f;  // NaN
  if (abs < 0x3c800000) {                    // below 2^-6: a subnormal, in units of 2^-9
    float units = std::nearbyint(std::bit_cast<float>(abs) * 0x1p9f);
    return sign | static_cast<std::uint8_t>(units);
  }
  if (abs >= 0x43e00000) return sign | 0x7e;  // 448 and above (inf included) saturate to 448
  std::uint32_t v = ((abs >> 23) - 127 + 7) << 3 | ((abs >> 20) & 0x7);
  const std::uint32_t rest = abs & 0xfffff;
  if (rest > 0x80000 || (rest == 0x80000 && (v & 1))) ++v;
  return sign | static_cast<std::uint8_t>(std::min<std::uint32_t>(v, 0x7e));
}

float from_fp8_e4m3(std::uint8_t x) {
  const int e = (x >> 3) & 0xf, m = x & 0x7;
  const float sign = (x & 0x80) ? -1.f : 1.f;
  if (e == 15 && m == 7) return std::nanf("");
  if (e == 0) return sign * static_cast<float>(m) * 0x1p-9f;
  return sign * std::ldexp(1.f + static_cast<float>(m) / 8, e - 7);
}

}  // namespace opmeter
