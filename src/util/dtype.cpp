#include "opmeter/dtype.hpp"

#include <array>
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

}  // namespace opmeter
