// Training parameters of the linear ops: phase and the float8 training knobs.
#include "ops/linear/train_params.hpp"

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/quant/recipe.hpp"

namespace opmeter::linear {
namespace {
constexpr const char* kDynamic = "dynamic";
constexpr const char* kRecipeGranularity = "recipe";

struct Knob {
  const char* key;
  const char* absent;
  std::vector<std::string> values;
  const char* help;
};

const std::vector<Knob>& float8_knob_table() {
  static const std::vector<Knob> table = {
      {kScalingInput, kDynamic, {kDynamic, "disabled"}, "float8 training: the input's scale (amax per step, or 1)"},
      {kScalingWeight, kDynamic, {kDynamic, "disabled"}, "float8 training: the weight's scale (amax per step, or 1)"},
      {kScalingGrad, kDynamic, {kDynamic, "disabled"}, "float8 training: grad_output's scale (amax per step, or 1)"},
      {kGranularity, kRecipeGranularity, {kRecipeGranularity, "tensorwise", "rowwise"},
       "float8 training: one scale per tensor or per row (default: the recipe's)"},
      {kFastAccum, "1", {"1", "0"}, "float8 training: fp8 GEMMs with fast accumulation (1) or not (0)"},
  };
  return table;
}
}  // namespace

Phase phase_of(const Case& c) {
  auto p = c.get_or(kPhase, "step");
  return p == "forward" ? Phase::forward : p == "backward" ? Phase::backward : Phase::step;
}

Float8Knobs float8_knobs(const Case& c) {
  Float8Knobs k;
  k.scale_input = c.get_or(kScalingInput, kDynamic) == kDynamic;
  k.scale_weight = c.get_or(kScalingWeight, kDynamic) == kDynamic;
  k.scale_grad = c.get_or(kScalingGrad, kDynamic) == kDynamic;
  auto g = c.get_or(kGranularity, kRecipeGranularity);
  k.rowwise = g == kRecipeGranularity ? recipe_of(c) == "float8dq-row" : g == "rowwise";
  k.fast_accum = c.get_or(kFastAccum, "1") == "1";
  return k;
}

std::vector<OptionalParam> training_params() {
  std::vector<OptionalParam> out = {{.key = kPhase, .config_key = kPhase, .absent = "step",
                                     .help = "mode=train: what is timed: step (forward + backward), forward or backward",
                                     .values = {"step", "forward", "backward"}}};
  for (auto& k : float8_knob_table())
    out.push_back({.key = k.key, .config_key = k.key, .absent = k.absent, .help = k.help, .values = k.values});
  return out;
}

void validate_training_params(const Case& c) {
  auto one_of = [&](const char* key, const std::vector<std::string>& values) {
    if (!c.has(key)) return;
    for (auto& v : values)
      if (c.get(key) == v) return;
    throw CaseError(fmt::format("{}={} unknown: expected one of {}", key, c.get(key), fmt::join(values, ", ")));
  };
  one_of(kPhase, {"step", "forward", "backward"});
  if (c.has(kPhase) && !training(c))
    throw CaseError(fmt::format("{}={} times part of a training step: it needs {}={}", kPhase, c.get(kPhase), kMode, kTrain));
  auto r = quant::parse_recipe(recipe_of(c));
  const bool fp8_training = training(c) && r && r->fp8() && r->dynamic();
  for (auto& k : float8_knob_table()) {
    one_of(k.key, k.values);
    if (c.has(k.key) && !fp8_training)
      throw CaseError(fmt::format("{}={} is a float8 training knob: it applies to quant=float8dq-tensor or float8dq-row "
                                  "with {}={}, not to quant={}{}",
                                  k.key, c.get(k.key), kMode, kTrain, recipe_of(c), training(c) ? "" : " in inference"));
  }
  // The recipe's own granularity written out would be a second case string for the same step.
  if (c.has(kGranularity) && c.get(kGranularity) == (recipe_of(c) == "float8dq-row" ? "rowwise" : "tensorwise"))
    throw CaseError(
        fmt::format("{}={} is {}'s own: leave it out of the case", kGranularity, c.get(kGranularity), recipe_of(c)));
}

}  // namespace opmeter::linear
