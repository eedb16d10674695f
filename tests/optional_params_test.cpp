// Optional case parameters (a linear layer's quantization recipe and training mode): case strings
// without them are unchanged, configs sweep them, and only impls that name them run such cases.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tests/config_errors.hpp"
#include "config/config.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/linear.hpp"

using namespace opmeter;

namespace {
using config_test_support::has;

std::string case_error(const std::string& text) {
  try {
    validate_case(parse_case(text));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

const std::string kLinear = "linear/onednn/bf16/batch=1,seq=4,hidden=256,out=64,act=none";
}  // namespace

TEST(OptionalParams, CasesWithoutThemKeepTheirStrings) {
  auto c = parse_case(kLinear + "/threads=2");
  EXPECT_EQ(c.to_string(), kLinear + "/threads=2");
  EXPECT_EQ(linear::recipe_of(c), "baseline");
  EXPECT_FALSE(linear::training(c));
  auto q = parse_case("linear/onednn/bf16/batch=1,seq=4,hidden=256,out=64,act=none,quant=int4wo-64/threads=2");
  EXPECT_EQ(linear::recipe_of(q), "int4wo-64");
  EXPECT_NO_THROW(validate_case(q));
}

TEST(OptionalParams, BadRecipesAndModesAreNamed) {
  auto with = [](const std::string& extra, const std::string& dtype = "bf16") {
    return case_error("linear/onednn/" + dtype + "/batch=1,seq=4,hidden=96,out=64,act=none," + extra + "/threads=1");
  };
  EXPECT_TRUE(has(with("quant=int3wo"), "quant=int3wo unknown")) << with("quant=int3wo");
  EXPECT_TRUE(has(with("quant=int4wo-64"), "does not divide hidden=96")) << with("quant=int4wo-64");
  EXPECT_EQ(with("quant=int4wo-32"), "no error");
  EXPECT_TRUE(has(with("quant=int8wo", "int8"), "takes activations in fp32, bf16 or fp16, not int8"))
      << with("quant=int8wo", "int8");
  EXPECT_TRUE(has(with("quant=baseline"), "is the default: leave it out")) << with("quant=baseline");
  EXPECT_TRUE(has(with("quant=int8wo,mode=train"), "has no training step")) << with("quant=int8wo,mode=train");
  EXPECT_EQ(with("quant=float8dq-row,mode=train"), "no error");
  EXPECT_TRUE(has(with("mode=fly"), "mode=fly unknown")) << with("mode=fly");
  // Checked against the declared values for every op (the registry's rule, not each op's).
  const std::string block = case_error(
      "transformer_block/onednn_train/fp32/batch=1,seq=4,hidden=64,heads=2,mlp=0,act=gelu,causal=0,mode=fly/threads=1");
  EXPECT_TRUE(has(block, "mode=fly unknown: expected one of inference, train")) << block;
  EXPECT_TRUE(has(with("colour=red"), "takes: batch, seq, hidden, out, act, quant, mode, phase, scaling_input")) << with("colour=red");
}

TEST(OptionalParams, ImplsWithoutThemSkipSuchCases) {
  auto& reg = Registry::global();
  auto c = parse_case("linear/onednn/bf16/batch=1,seq=4,hidden=256,out=64,act=none,quant=int8wo/threads=1");
  auto s = takes_optional_params(*reg.impl("linear", "onednn"), c);
  EXPECT_FALSE(s.ok);
  EXPECT_TRUE(has(s.reason, "linear impl 'onednn' does not run quant=int8wo")) << s.reason;
  EXPECT_TRUE(takes_optional_params(*reg.impl("linear", "onednn"), parse_case(kLinear + "/threads=1")).ok);

  ImplDef quantized{.op = "linear", .impl = "q", .needs = {"quant"}};
  ImplDef trainer{.op = "linear", .impl = "t", .needs = {"mode"}, .accepts = {"quant"}};
  EXPECT_TRUE(takes_optional_params(quantized, c).ok);
  EXPECT_FALSE(takes_optional_params(quantized, parse_case(kLinear + "/threads=1")).ok);
  EXPECT_FALSE(takes_optional_params(trainer, c).ok);  // needs mode
  auto fp8_train = parse_case("linear/onednn/bf16/batch=1,seq=4,hidden=256,out=64,act=none,quant=float8dq-row,mode=train/threads=1");
  EXPECT_TRUE(takes_optional_params(trainer, fp8_train).ok);
  EXPECT_FALSE(takes_optional_params(quantized, fp8_train).ok);  // mode is neither needed nor accepted
}

TEST(OptionalParams, ConfigSweepsThemAndPairsOnlyImplsThatRunThem) {
  auto plan = load_config_text("ops: [linear]\nimpls: [onednn]\ndtypes: [bf16]\nbatch: [1]\nseq: [4]\nhidden: [256]\n"
                               "out: [64]\nquantization: [baseline, int8wo]\nmode: [inference, train]\n",
                               "t.yaml", 1);
  // onednn takes neither recipes nor training: only the baseline inference case is its.
  ASSERT_EQ(plan.cases.size(), 1u);
  EXPECT_EQ(plan.cases[0].to_string(), "linear/onednn/bf16/batch=1,seq=4,hidden=256,out=64,act=none/threads=1");
}

TEST(OptionalParams, ConfigErrorsNameTheKey) {
  auto error_of = [](const std::string& yaml) { return config_test_support::config_error_of(yaml); };
  auto unknown = error_of("ops: [linear]\nquantization: [int4wo-65]\n");
  EXPECT_TRUE(has(unknown, "t.yaml:2:")) << unknown;
  EXPECT_TRUE(has(unknown, "unknown quantization value 'int4wo-65'; did you mean 'int4wo-64'?")) << unknown;
  auto mode = error_of("ops: [linear]\nmode: [training]\n");
  EXPECT_TRUE(has(mode, "unknown mode value 'training'")) << mode;
}

// Issue 27 item 12: a config whose optional values no impl runs together says which, and which
// impls run each value alone, not just "expands to no cases"; values that do not combine at all
// say the rule they break.
TEST(OptionalParams, NoImplRunningTheValuesTogetherIsNamed) {
  auto error = config_test_support::config_error_of("ops: [linear]\ndtypes: [bf16]\nbatch: [1]\nseq: [4]\nhidden: [256]\n"
                                                    "out: [64]\nquantization: [float8dq-row]\nmode: [train]\n");
  EXPECT_TRUE(has(error, "the config expands to no cases: no impl of linear runs quant=float8dq-row with mode=train")) << error;
  EXPECT_TRUE(has(error, "(impls that run them together: ")) << error;
  EXPECT_TRUE(has(error, "; quant=float8dq-row: ")) << error;
  EXPECT_TRUE(has(error, "; mode=train: ")) << error;
  error = config_test_support::config_error_of("ops: [linear]\ndtypes: [bf16]\nbatch: [1]\nseq: [4]\nhidden: [256]\n"
                                               "out: [64]\nquantization: [int4wo-64]\nmode: [train]\n");
  EXPECT_TRUE(has(error, "the config expands to no cases: quant=int4wo-64 has no training step")) << error;
}

// Each value is named with the impls that run it in a training step: a phase alone would be no
// impl's, and a recipe alone would name an inference impl (opmeter_quant) that has no training step.
TEST(OptionalParams, ValuesAloneAreNamedWithTheirMode) {
  auto plan = load_config_text("ops: [linear]\nimpls: [onednn_train, opmeter_quant]\ndtypes: [fp32]\nbatch: [1]\n"
                               "seq: [16]\nhidden: [64]\nout: [64]\nmode: [train]\nphase: [forward]\n"
                               "quantization: [baseline, float8dq-row]\n",
                               "t.yaml", 2);
  const std::string notes = fmt::format("{}", fmt::join(plan.notes, " | "));
  EXPECT_TRUE(has(notes, "no impl of linear runs quant=float8dq-row with mode=train with phase=forward")) << notes;
  EXPECT_TRUE(has(notes, "; mode=train: onednn_train; phase=forward: onednn_train)")) << notes;
  EXPECT_FALSE(has(notes, "quant=float8dq-row: opmeter_quant")) << notes;
  EXPECT_TRUE(has(notes, "quant=float8dq-row: none listed")) << notes;
}

// Impls that each need a value the config does not give (a training impl without `mode: [train]`)
// say which, at `impls:`, not a bare "expands to no cases" at `ops:`.
TEST(OptionalParams, ImplsNeedingAValueSayWhichAtImpls) {
  auto error = config_test_support::config_error_of(
      "ops: [linear]\ndtypes: [fp32]\nbatch: [1]\nseq: [16]\nhidden: [64]\nout: [64]\n"
      "impls: [onednn_train, opmeter_quant]\n");
  EXPECT_TRUE(has(error,
                  "t.yaml:7:8: the config expands to no cases: no listed impl of linear runs its cases: "
                  "onednn_train runs only mode=train (add `mode: [train]`); opmeter_quant runs only cases "
                  "with quant (add `quantization:`)"))
      << error;
}

// An op its values leave with nothing is the config's error beside another op too, not a note
// while the other op alone is measured.
TEST(OptionalParams, AnOpLeftWithNoCaseIsAnErrorBesideOtherOps) {
  auto error = config_test_support::config_error_of(
      "ops: [linear, add]\ndtypes: [fp32]\nbatch: [1]\nseq: [8]\nhidden: [64]\nout: [64]\nksplit: 3\n");
  EXPECT_TRUE(has(error, "t.yaml:7:9: the config expands to no linear cases: ksplit=3 splits K")) << error;
  error = config_test_support::config_error_of(
      "ops: [linear, add]\ndtypes: [fp32]\nbatch: [1]\nseq: [8]\nhidden: [64]\nout: [64]\nphase: [forward]\n");
  EXPECT_TRUE(has(error, "the config expands to no linear cases: phase=forward")) << error;
}

// A config that expands to no cases because its values do not combine is reported at the value
// the reason names first (its item in its list), not at `ops:`.
TEST(OptionalParams, ValuesThatDoNotCombineAreReportedAtTheValue) {
  auto error = config_test_support::config_error_of("ops: [linear]\nhidden: 64\nphase: forward\n");
  EXPECT_EQ(error,
            "t.yaml:3:8: the config expands to no cases: phase=forward times part of a training step: it needs "
            "mode=train");
  error = config_test_support::config_error_of(
      "ops: [linear]\nhidden: 64\nquantization: [int8wo, int4wo-64]\nmode: train\n");
  EXPECT_TRUE(has(error, "t.yaml:3:16: the config expands to no cases: quant=int8wo has no training step")) << error;
  EXPECT_TRUE(has(error, "; quant=int4wo-64 has no training step")) << error;
  error = config_test_support::config_error_of(
      "ops: [linear]\ndtypes: [bf16]\nhidden: [256]\nquantization: [float8dq-row]\n"
      "mode: [train]\n");
  EXPECT_TRUE(has(error,
                  "t.yaml:4:16: the config expands to no cases: no impl of linear runs quant=float8dq-row with "
                  "mode=train"))
      << error;
}

// A value no listed impl runs names the op's impls that do, not "none" (which read as: no impl of
// the op runs it).
TEST(OptionalParams, AValueNoListedImplRunsNamesTheImplsThatDo) {
  auto error = config_test_support::config_error_of(
      "ops: [transformer_block]\nimpls: [opmeter]\ndtypes: [bf16]\nbatch: [1]\nseq: [4]\nhidden: [64]\nheads: [1]\n"
      "mlp: [0]\nact: [gelu]\ncausal: [0]\nmode: [train]\n");
  EXPECT_TRUE(has(error, "mode=train: none listed; ")) << error;
  EXPECT_TRUE(has(error, "onednn_train")) << error;
}

// Issue 27 item 12: a value listed twice would be measured twice under one case string.
TEST(OptionalParams, AValueListedTwiceIsRefusedNamingTheKey) {
  auto twice = config_test_support::config_error_of("ops: [linear]\nquantization: [int8wo, int8wo]\n");
  EXPECT_TRUE(has(twice, "t.yaml:2:")) << twice;
  EXPECT_TRUE(has(twice, "quantization: 'int8wo' is listed twice")) << twice;
  auto threads = config_test_support::config_error_of("ops: [add]\nthreads: [1, 2, 1]\n");
  EXPECT_TRUE(has(threads, "threads: 1 is listed twice")) << threads;
  auto axis = config_test_support::config_error_of("ops: [add]\nbatch: [1, 1]\n");
  EXPECT_TRUE(has(axis, "batch: '1' is listed twice")) << axis;
  auto leading = config_test_support::config_error_of("ops: [add]\nbatch: [01]\n");
  EXPECT_TRUE(has(leading, "batch=01: write the integer as batch=1")) << leading;
  // Quoted, it is a string where an integer belongs, and that is the error.
  leading = config_test_support::config_error_of("ops: [add]\nbatch: ['01']\n");
  EXPECT_TRUE(has(leading, "batch: expected an integer, got the string \"01\"")) << leading;
}
