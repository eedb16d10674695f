#include "ops/linear/quant/recipe.hpp"

#include <fmt/format.h>

namespace opmeter::quant {
namespace {
constexpr std::size_t kInt4Groups[] = {32, 64, 128};
// s32 accumulation of int8 x int8 products: |sum| <= K * 127 * 127 must stay below 2^31.
constexpr std::size_t kMaxInt8Hidden = (std::size_t{1} << 31) / (127 * 127);
}  // namespace

int Recipe::weight_bits() const { return weights == WeightFormat::int4 ? 4 : weights == WeightFormat::full ? 16 : 8; }

const std::vector<std::string>& recipe_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {kBaseline, "int8wo", "int8dq", "float8wo", "float8dq-tensor", "float8dq-row"};
    for (auto g : kInt4Groups) v.push_back(fmt::format("int4wo-{}", g));
    for (auto g : kInt4Groups) v.push_back(fmt::format("hqq-int4-{}", g));
    return v;
  }();
  return names;
}

std::optional<Recipe> parse_recipe(const std::string& name) {
  Recipe r;
  r.name = name;
  if (name == kBaseline) return r;
  if (name == "int8wo" || name == "int8dq") {
    r.weights = WeightFormat::int8;
    if (name == "int8dq") r.activations = ActivationFormat::int8_per_token;
    return r;
  }
  if (name == "float8wo" || name == "float8dq-tensor" || name == "float8dq-row") {
    r.weights = WeightFormat::fp8;
    if (name == "float8dq-tensor") r.activations = ActivationFormat::fp8_per_tensor;
    if (name == "float8dq-row") r.activations = ActivationFormat::fp8_per_row;
    return r;
  }
  for (auto g : kInt4Groups) {
    if (name == fmt::format("int4wo-{}", g) || name == fmt::format("hqq-int4-{}", g)) {
      r.weights = WeightFormat::int4;
      r.group = g;
      r.hqq = name.starts_with("hqq");
      return r;
    }
  }
  return std::nullopt;
}

std::string recipe_problem(const Recipe& r, std::size_t hidden, const char* name) {
  if (r.group && hidden % r.group != 0)
    return fmt::format("recipe {} quantizes groups of {} along a layer's inputs, which does not divide {}={}", r.name,
                       r.group, name, hidden);
  if (r.activations == ActivationFormat::int8_per_token && hidden > kMaxInt8Hidden)
    return fmt::format("recipe {} sums int8 products in s32, which could overflow above {}={}", r.name, name, kMaxInt8Hidden);
  return "";
}

std::string weights_held_as(const Recipe& r) {
  switch (r.weights) {
    case WeightFormat::full: return "";
    case WeightFormat::int8: return "s8 codes and a scale per channel";
    case WeightFormat::fp8:
      return r.activations == ActivationFormat::fp8_per_tensor ? "fp8_e4m3 codes and one scale"
                                                               : "fp8_e4m3 codes and a scale per channel";
    case WeightFormat::int4:
      return fmt::format("u4 codes with a scale and zero per {} inputs{}", r.group, r.hqq ? " by HQQ" : "");
  }
  return "";
}

std::string activations_held_as(const Recipe& r) {
  switch (r.activations) {
    case ActivationFormat::full: return "";
    case ActivationFormat::int8_per_token: return "s8 per token";
    case ActivationFormat::fp8_per_tensor: return "fp8_e4m3 with one scale";
    case ActivationFormat::fp8_per_row: return "fp8_e4m3 per token";
  }
  return "";
}

bool trains(const Recipe& r) {
  return r.baseline() || r.activations == ActivationFormat::fp8_per_tensor || r.activations == ActivationFormat::fp8_per_row;
}

}  // namespace opmeter::quant
