// The training parameters of the linear ops: phase and the float8 training knobs are validated
// with messages naming the key, and knobs on cases they cannot apply to are refused.
#include <gtest/gtest.h>

#include "opmeter/registry.hpp"
#include "ops/linear/linear.hpp"

using namespace opmeter;

namespace {
std::string case_error(const std::string& extra) {
  try {
    validate_case(parse_case("linear/reference/bf16/batch=1,seq=4,hidden=64,out=32,act=none," + extra + "/threads=1"));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(TrainParams, KnobsParseIntoTheirSettings) {
  auto k = linear::float8_knobs(parse_case(
      "linear/reference/bf16/batch=1,seq=4,hidden=64,out=32,act=none,quant=float8dq-tensor,mode=train,"
      "scaling_weight=disabled,granularity=rowwise,fast_accum=0/threads=1"));
  EXPECT_TRUE(k.scale_input);
  EXPECT_FALSE(k.scale_weight);
  EXPECT_TRUE(k.scale_grad);
  EXPECT_TRUE(k.rowwise);
  EXPECT_FALSE(k.fast_accum);
  // Without granularity the recipe decides.
  auto row = parse_case("linear/reference/bf16/batch=1,seq=4,hidden=64,out=32,act=none,quant=float8dq-row,mode=train/threads=1");
  EXPECT_TRUE(linear::float8_knobs(row).rowwise);
  EXPECT_EQ(linear::phase_of(row), linear::Phase::step);
}

TEST(TrainParams, BadKnobValuesAreNamed) {
  const std::string fp8 = "quant=float8dq-tensor,mode=train,";
  EXPECT_EQ(case_error(fp8 + "scaling_input=disabled,fast_accum=0"), "no error");
  EXPECT_TRUE(has(case_error(fp8 + "scaling_input=static"), "scaling_input=static unknown: expected one of dynamic, disabled"))
      << case_error(fp8 + "scaling_input=static");
  EXPECT_TRUE(has(case_error(fp8 + "granularity=columnwise"), "granularity=columnwise unknown"));
  EXPECT_TRUE(has(case_error(fp8 + "fast_accum=yes"), "fast_accum=yes unknown: expected one of 1, 0"));
  EXPECT_TRUE(has(case_error("mode=train,phase=sideways"), "phase=sideways unknown"));
  // The recipe's own granularity is not a second case string for the same step.
  EXPECT_EQ(case_error("quant=float8dq-row,mode=train,granularity=rowwise"),
            "granularity=rowwise is float8dq-row's own: leave it out of the case");
  EXPECT_EQ(case_error(fp8 + "granularity=tensorwise"),
            "granularity=tensorwise is float8dq-tensor's own: leave it out of the case");
  EXPECT_EQ(case_error("quant=float8dq-row,mode=train,granularity=tensorwise"), "no error");
}

TEST(TrainParams, KnobsOutsideFloat8TrainingAreRefused) {
  auto baseline = case_error("mode=train,fast_accum=0");
  EXPECT_TRUE(has(baseline, "fast_accum=0 is a float8 training knob")) << baseline;
  EXPECT_TRUE(has(baseline, "not to quant=baseline")) << baseline;
  auto inference = case_error("quant=float8dq-row,scaling_grad=disabled");
  EXPECT_TRUE(has(inference, "not to quant=float8dq-row in inference")) << inference;
  EXPECT_TRUE(has(case_error("phase=forward"), "phase=forward times part of a training step: it needs mode=train"));
  EXPECT_EQ(case_error("mode=train,phase=backward"), "no error");
}
