#include "ops/tensor/kernels.hpp"

#include <array>

namespace opmeter::tensor {
namespace {
constexpr std::array<std::pair<Act, std::string_view>, 9> kActNames = {{
    {Act::none, "none"},
    {Act::relu, "relu"},
    {Act::relu6, "relu6"},
    {Act::leaky_relu, "leaky_relu"},
    {Act::gelu, "gelu"},
    {Act::gelu_tanh, "gelu_tanh"},
    {Act::silu, "silu"},
    {Act::sigmoid, "sigmoid"},
    {Act::hardswish, "hardswish"},
}};
}  // namespace

std::string_view to_string(Act a) {
  for (auto& [act, name] : kActNames)
    if (act == a) return name;
  return "?";
}

std::optional<Act> parse_act(std::string_view s) {
  for (auto& [act, name] : kActNames)
    if (name == s) return act;
  return std::nullopt;
}

const std::vector<Act>& all_acts() {
  static const std::vector<Act> acts = [] {
    std::vector<Act> v;
    for (auto& [act, name] : kActNames)
      if (act != Act::none) v.push_back(act);
    return v;
  }();
  return acts;
}

const Kernels& kernels() {
  static const Kernels k = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return avx512_kernels();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2_kernels();
    return base_kernels();
  }();
  return k;
}

}  // namespace opmeter::tensor
