#pragma once
// Quantization recipes: how a linear layer's weights (and, for dynamic recipes, its activations)
// are stored and multiplied. A recipe is the value of a case's optional `quant` parameter
// (`quant=int4wo-64`); `baseline` (no quantization) is a case without it.
//
//   int8wo           W int8, symmetric, one scale per output channel; x stays in the case's dtype
//   int8dq           W as int8wo; x int8 per token (symmetric, scale amax/127), s32 GEMM, scaled
//   float8wo         W fp8 e4m3, one scale per output channel (amax/448); x in the case's dtype
//   float8dq-tensor  W and x fp8 e4m3, one scale each for the whole tensor; fp8 GEMM, fp32 acc.
//   float8dq-row     W fp8 per output channel, x fp8 per token
//   int4wo-G         W uint4 per group of G along K, asymmetric: w = (q - zero) * scale,
//                    round-to-nearest scale (max-min)/15 and integer zero
//   hqq-int4-G       as int4wo-G, scale and zero optimised per group by HQQ at setup
// Scales and zeros are rounded to the activations' 16-bit type when they are bf16 / fp16 (as
// torchao stores them), so every kernel reads exactly the values the reference uses.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace opmeter::quant {

enum class WeightFormat { full, int8, fp8, int4 };
enum class ActivationFormat { full, int8_per_token, fp8_per_tensor, fp8_per_row };

struct Recipe {
  std::string name;  // as written in a case: int4wo-64
  WeightFormat weights = WeightFormat::full;
  ActivationFormat activations = ActivationFormat::full;
  std::size_t group = 0;  // int4: values of a row along K sharing a scale and zero
  bool hqq = false;       // int4 scale and zero from HQQ instead of round-to-nearest
  bool weight_only() const { return weights != WeightFormat::full && activations == ActivationFormat::full; }
  bool dynamic() const { return activations != ActivationFormat::full; }
  bool fp8() const { return weights == WeightFormat::fp8; }
  bool baseline() const { return weights == WeightFormat::full; }
  // Bits of one stored weight code (8 or 4; 16 for the baseline, whose weights are bf16 / fp16).
  int weight_bits() const;
};

inline constexpr const char* kBaseline = "baseline";
// Every recipe, baseline first: the values of `quantization:` in a config.
const std::vector<std::string>& recipe_names();
// The recipe of a name; empty for an unknown one.
std::optional<Recipe> parse_recipe(const std::string& name);
// Why a recipe cannot quantize a layer of `hidden` inputs (a group that does not divide it, an
// int8 dot product that could overflow s32); empty when it can.
std::string recipe_problem(const Recipe& r, std::size_t hidden, const char* name = "hidden");
// How a recipe holds a layer's weights, and its activations where it quantizes them on every call
// (empty for the baseline and weight-only recipes): "s8 codes and a scale per channel",
// "s8 per token". No commas: element_types lists the inputs with them.
std::string weights_held_as(const Recipe& r);
std::string activations_held_as(const Recipe& r);
// The recipes that have a training step (fp8 GEMMs in forward and backward): baseline too.
bool trains(const Recipe& r);

}  // namespace opmeter::quant
