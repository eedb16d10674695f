#include <gtest/gtest.h>

#include <set>

#include <algorithm>

#include <fmt/format.h>

#include "config/config.hpp"
#include "config/yaml_reader.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "ops/peak/peak.hpp"
#include "tests/config_errors.hpp"

using namespace opmeter;

namespace {
std::string error_of(const std::string& yaml) { return config_test_support::config_error_of(yaml, "t.yaml"); }
using config_test_support::has;
}  // namespace

TEST(Config, IssueExampleWorksAsWritten) {
  auto plan = load_config_text(R"(
ops: [gemm, bandwidth, peak]
impls: [onednn, openblas]        # optional: all available when absent
dtypes: [fp32, bf16]
threads: 2                       # optional
stopping: {max_noise: 0.5, min_samples: 10, min_time_s: 0.5, timeout_s: 15}
shapes:
  - name: custom
    shapes: [[1024, 1024, 1024], [2048, 4096, 1024]]   # [m, k, n]
  - name: pow2
    min_power: 10
    max_power: 12
)", "example.yaml", 8);
  // gemm: 4 shapes (1024^3 is custom's and pow2's: measured once) x 2 impls x 2 dtypes; bandwidth:
  // 6 kernels (fp32 only); peak: each dtype's kernels (fp32: fma; bf16: fma, and amx on an AMX CPU).
  EXPECT_EQ(plan.cases.size(), 16u + 6u + 1u + peak::kernels_for(DType::bf16, false).size());
  EXPECT_DOUBLE_EQ(plan.stopping.max_noise, 0.005);
  EXPECT_DOUBLE_EQ(plan.stopping.timeout_s, 15);
  for (auto& c : plan.cases) EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(plan.cases[1].to_string(), "gemm/onednn/bf16/M=1024,N=1024,K=1024/threads=2");
  // [m, k, n] = [2048, 4096, 1024] -> M=2048, K=4096, N=1024.
  EXPECT_EQ(plan.cases[4].to_string(), "gemm/onednn/fp32/M=2048,N=1024,K=4096/threads=2");
  EXPECT_EQ(plan.cases[16].op, "bandwidth");
  EXPECT_EQ(plan.cases[16].impl, "opmeter");
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) { return has(n, "planned twice"); }));
}

TEST(Config, DefaultsThreadsAndAllImpls) {
  auto plan = load_config_text("ops: [gemm]\nshapes: [{name: custom, shapes: [[8, 8, 8]]}]\n", "t.yaml", 3);
  // Every registered CPU gemm impl in fp32.
  std::size_t cpu_impls = 0;
  for (auto* impl : Registry::global().impls_of("gemm")) cpu_impls += impl->runs_on("cpu") && !impl->on_request;
  ASSERT_EQ(plan.cases.size(), cpu_impls);
  EXPECT_EQ(plan.cases[0].threads, 3);
  EXPECT_EQ(plan.stopping.timeout_s, 15);
}

TEST(Config, MalformedYamlNamesTheLine) {
  auto e = error_of("ops: [gemm\nshapes: x\n");
  EXPECT_TRUE(has(e, "t.yaml:")) << e;
  EXPECT_TRUE(has(e, "malformed YAML")) << e;
}

TEST(Config, UnknownKeySuggestsNearest) {
  auto e = error_of("ops: [peak]\nthread: 2\n");
  EXPECT_TRUE(has(e, "t.yaml:2:1: unknown key 'thread' in the config; did you mean 'threads'?")) << e;
  e = error_of("ops: [peak]\nstopping: {max_nosie: 1}\n");
  EXPECT_TRUE(has(e, "did you mean 'max_noise'")) << e;
  e = error_of("ops: [peak]\nzzzzzzzz: 1\n");
  EXPECT_TRUE(has(e, "valid keys:")) << e;
}

// A key that only other ops take would be ignored, its values unchecked: an error at the key.
TEST(Config, AnOpKeyNoneOfTheConfigsOpsTakesIsAnError) {
  auto e = error_of("ops: [add]\nheads: [abc, -5]\n");
  EXPECT_TRUE(has(e, "t.yaml:2:1: 'heads' is a parameter of ")) << e;
  EXPECT_TRUE(has(e, "attention")) << e;
  EXPECT_TRUE(has(e, "none of this config's ops (add) takes it, so it would be ignored")) << e;
  e = error_of("ops: [add]\nquantization: [nope]\n");
  EXPECT_TRUE(has(e, "t.yaml:2:1: 'quantization' is a parameter of ")) << e;
  e = error_of("ops: [add, relu]\nbandwidth: {kernels: [bogus]}\n");
  EXPECT_TRUE(has(e, "'bandwidth' is a parameter of bandwidth: none of this config's ops (add, relu) takes it")) << e;
  // Taken by one of the ops, it is checked and used as before; the shared keys stay free.
  EXPECT_EQ(error_of("ops: [add, attention]\nheads: [2]\nhidden: [64]\nthreads: [1]\n"), "no error");
}

// `shapes:` sizes gemm and the linear family only: beside other ops it would be ignored, in
// whatever form it is written (a mapping keyed by op was silently dropped).
TEST(Config, ShapesBesideOpsThatTakeNoMatrixShapesIsAnError) {
  auto e = error_of("ops: [layernorm]\nshapes:\n  - name: custom\n    shapes: [[8, 8, 8]]\n");
  EXPECT_TRUE(has(e, "t.yaml:2:1: 'shapes' sizes gemm, ")) << e;
  EXPECT_TRUE(has(e, "linear")) << e;
  EXPECT_TRUE(has(e, "none of this config's ops (layernorm) takes it, so it would be ignored")) << e;
  e = error_of("ops: [transformer_block]\nshapes:\n  transformer_block: [{batch: 1}]\n");
  EXPECT_TRUE(has(e, "t.yaml:2:1: 'shapes' sizes ")) << e;
  EXPECT_EQ(error_of("ops: [layernorm, linear]\nthreads: [1]\nshapes:\n  - name: custom\n    shapes: [[8, 8, 8]]\n"),
            "no error");
}

// A key given twice is an error at its second place, in the config's top level, a nested mapping
// or a mapping in a list (torchao's loader would take the last value, ours the first). Aliases are
// walked once: a billion-laughs tree of them loads at once.
TEST(Config, AKeyThatIsNoNameIsAnError) {
  auto e = error_of("ops: [gemm]\n[a]: 1\n");
  EXPECT_TRUE(has(e, "t.yaml:2:1: a key in the config is a list: keys are names")) << e;
}

TEST(Config, AKeyGivenTwiceIsAnError) {
  auto e = error_of("ops: [peak]\ndtypes: [fp32]\nthreads: [1]\ndtypes: [bf16]\n");
  EXPECT_TRUE(has(e, "t.yaml:4:1: key 'dtypes' given twice in one mapping (first at 2:1)")) << e;
  e = error_of("ops: [peak]\nstopping: {max_noise: 1, max_noise: 2}\n");
  EXPECT_TRUE(has(e, "t.yaml:2:26: key 'max_noise' given twice in one mapping (first at 2:12)")) << e;
  e = error_of("ops: [linear]\nshapes:\n  - name: custom\n    shapes: [[1, 8, 8]]\n    name: llama\n");
  EXPECT_TRUE(has(e, "t.yaml:5:5: key 'name' given twice")) << e;
  std::string bomb = "ops: [peak]\nthreads: [1]\nx0: &a0 [1, 1]\n";
  for (int i = 1; i < 40; ++i) bomb += fmt::format("x{}: &a{} [*a{}, *a{}]\n", i, i, i - 1, i - 1);
  e = error_of(bomb);  // 2^40 leaves if expanded: fails on its unknown keys, not by running out of time
  EXPECT_TRUE(has(e, "unknown key 'x0'")) << e;
  EXPECT_EQ(error_of("ops: [peak]\nthreads: [1]\nnote: &n {a: 1}\nother: *n\n").find("given twice"), std::string::npos);
}

// A case planned twice (a shape listed twice, overlapping generators) is measured once, with a note.
TEST(Config, ACasePlannedTwiceIsKeptOnceWithANote) {
  auto plan = load_config_text("ops: [linear]\nimpls: [onednn]\ndtypes: [fp32]\nthreads: [1]\n"
                               "shapes: [{name: custom, shapes: [[4, 64, 32], [4, 64, 32], [4, 64, 16]]}]\n",
                               "t.yaml", 2);
  std::set<std::string> names;
  for (auto& c : plan.cases) EXPECT_TRUE(names.insert(c.to_string()).second) << c.to_string();
  EXPECT_EQ(plan.cases.size(), 2u);
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(),
                          [](const std::string& n) { return has(n, "1 case was planned twice") && has(n, "out=32"); }))
      << fmt::format("{}", fmt::join(plan.notes, " | "));
  plan = load_config_text("ops: [gemm]\nimpls: [onednn]\ndtypes: [fp32]\nthreads: [1]\n"
                          "shapes: [{name: pow2, min_power: 5, max_power: 6}, {name: pow2_extended, min_power: 5, max_power: 5}]\n",
                          "t.yaml", 2);
  names.clear();
  for (auto& c : plan.cases) EXPECT_TRUE(names.insert(c.to_string()).second) << c.to_string();
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) { return has(n, "planned twice"); }));
}

// A sweep's pairs that no listed impl runs are left out with a note saying why: the pair's own
// rule where it breaks one (phase without mode=train, a recipe without a training step), else
// which impls run each value.
TEST(Config, PairsNoImplRunsAreLeftOutWithANote) {
  auto plan = load_config_text("ops: [linear]\nimpls: [onednn, opmeter_quant, onednn_train]\ndtypes: [bf16]\n"
                               "threads: [1]\nquantization: [baseline, int8wo, float8dq-row]\nmode: [inference, train]\n"
                               "phase: [forward, step]\nshapes: [{name: custom, shapes: [[4, 64, 32]]}]\n",
                               "t.yaml", 2);
  auto noted = [&](const std::string& part) {
    return std::any_of(plan.notes.begin(), plan.notes.end(),
                       [&](const std::string& n) { return has(n, part) && has(n, "left out"); });
  };
  const std::string notes = fmt::format("{}", fmt::join(plan.notes, " | "));
  EXPECT_TRUE(noted("quant=int8wo has no training step")) << notes;
  EXPECT_TRUE(noted("no impl of linear runs quant=float8dq-row with mode=train")) << notes;
  // ...and which impls run the pair, on which backend where it is not this one's.
  if (Registry::global().impl("linear", "cublaslt_fp8_train")) {
    EXPECT_TRUE(noted("(impls that run them together: none listed; cublaslt_fp8_train (on cuda)")) << notes;
  }
  EXPECT_TRUE(noted("phase=forward times part of a training step: it needs mode=train")) << notes;
  std::set<std::string> kinds;
  for (auto& c : plan.cases)
    if (c.op == "linear") kinds.insert(c.impl + (c.has("quant") ? "/" + c.get("quant") : "") + (c.has("phase") ? "/" + c.get("phase") : ""));
  EXPECT_EQ(kinds, (std::set<std::string>{"onednn", "onednn_train", "onednn_train/forward", "opmeter_quant/int8wo",
                                          "opmeter_quant/float8dq-row"}));
}

// An impl that takes every optional value (the worker's torch) meets the pairs the lists cross
// that the op refuses (phase without mode=train; int8dq on a transformer_block beside a linear):
// each is left out with a note where another case of the sweep takes its values, and an error where
// none does.
TEST(Config, PairsTheOpRefusesAreLeftOutWhereTheSweepUsesTheirValues) {
  auto plan = load_config_text(
      "ops: [linear]\nimpls: [onednn_train, torch]\ndtypes: [fp32]\nthreads: [1]\n"
      "mode: [inference, train]\nphase: [forward, step]\n"
      "shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n",
      "t.yaml", 2);
  const std::string notes = fmt::format("{}", fmt::join(plan.notes, " | "));
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return n == "phase=forward times part of a training step: it needs mode=train: left out";
  })) << notes;
  std::set<std::string> kinds;
  for (auto& c : plan.cases)
    kinds.insert(c.impl + (c.has("mode") ? "/train" : "") + (c.has("phase") ? "/" + c.get("phase") : ""));
  EXPECT_EQ(kinds, (std::set<std::string>{"onednn_train/train", "onednn_train/train/forward", "torch", "torch/train",
                                          "torch/train/forward"}));
  const std::string block =
      "dtypes: [bf16]\nthreads: [1]\nbatch: [1]\nseq: [1]\nhidden: [128]\nheads: [2]\nmlp: [256]\n"
      "quantization: [baseline, int8wo, int8dq]\n";
  plan = load_config_text("ops: [linear, transformer_block]\nout: [64]\n" + block, "t.yaml", 2);
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return has(n, "quant=int8dq: transformer_block takes weight-only recipes") && has(n, "left out");
  })) << fmt::format("{}", fmt::join(plan.notes, " | "));
  EXPECT_TRUE(std::any_of(plan.cases.begin(), plan.cases.end(),
                          [](const Case& c) { return c.op == "linear" && c.get_or("quant", "") == "int8dq"; }));
  auto e = error_of("ops: [transformer_block]\n" + block);
  EXPECT_TRUE(has(e, "t.yaml:9:34: quant=int8dq: transformer_block takes weight-only recipes")) << e;
}

// A sweep value out of range is reported at its place in its list, not at `ops:`.
TEST(Config, ABadSweepValueIsReportedWhereItIsWritten) {
  auto e = error_of("ops: [add]\nimpls: [opmeter]\nseq: [4]\nhidden: [64]\nbatch: [1, 2, -7]\n");
  EXPECT_TRUE(has(e, "t.yaml:5:15: add batch=-7 out of range")) << e;
  e = error_of("ops: [add]\nimpls: [opmeter]\nseq: [4]\nhidden: [64]\nbatch: 0\n");
  EXPECT_TRUE(has(e, "t.yaml:5:8: add batch=0 out of range")) << e;
}

// Parameters valid alone but not together are reported at the one the message names that is
// written in the config, the value of a list that only this case has first; dimensions at the
// `shapes:` entry that gave them; never at `ops:`.
TEST(Config, AnInvalidCombinationIsReportedAtTheParameter) {
  // heads: [4, 5] beside hidden: 96: the 5, not hidden (and not `ops:`).
  auto e = error_of("ops: [transformer_block]\nhidden: 96\nheads: [4, 5]\n");
  EXPECT_EQ(e,
            "t.yaml:3:12: transformer_block hidden=96 is not divisible by heads=5: each head takes hidden / heads "
            "columns");
  // hidden: [96, 100] beside heads: 8: the 100.
  e = error_of("ops: [transformer_block]\nhidden: [96, 100]\nheads: 8\n");
  EXPECT_EQ(e,
            "t.yaml:2:14: transformer_block hidden=100 is not divisible by heads=8: each head takes hidden / heads "
            "columns");
  // Both written once: the first the message names.
  e = error_of("ops: [transformer_block]\nheads: 5\nhidden: 96\n");
  EXPECT_EQ(e,
            "t.yaml:3:9: transformer_block hidden=96 is not divisible by heads=5: each head takes hidden / heads "
            "columns");
  // A message naming kernel, image and padding with their values: the image of the two, the value
  // of a list, is the one that is too small.
  e = error_of("ops: [conv2d]\nkernel: 5\npadding: 0\nimage: [8, 2]\n");
  EXPECT_EQ(e, "t.yaml:4:12: conv2d kernel=5 larger than the padded image: image=2 + 2 x padding=0 = 2");
  e = error_of("ops: [conv2d]\nkernel: [3, 7]\npadding: 1\nimage: 4\n");
  EXPECT_EQ(e, "t.yaml:2:13: conv2d kernel=7 larger than the padded image: image=4 + 2 x padding=1 = 6");
  // A recipe whose group does not divide hidden: the recipe's own item in its list.
  e = error_of("ops: [linear]\nhidden: 96\nquantization: [int8wo, int4wo-64]\n");
  EXPECT_EQ(e,
            "t.yaml:3:24: quant=int4wo-64: recipe int4wo-64 quantizes groups of 64 along a layer's inputs, which "
            "does not divide hidden=96");
}

// A dimension that comes from `shapes:` and that the op rejects is reported at the custom shape
// that holds it, or at the generator that drew it, not at `ops:`.
TEST(Config, ARejectedShapeIsReportedAtItsShapesEntry) {
  auto e = error_of(
      "ops: [gemm]\ndtypes: [int8]\nshapes:\n  - name: custom\n    shapes:\n      - [64, 64, 64]\n"
      "      - [64, 70000, 64]\n");
  EXPECT_EQ(e, "t.yaml:7:9: int8 gemm K must be < 65536 so that s32 accumulation cannot overflow");
  e = error_of(
      "ops: [gemm]\ndtypes: [int8]\nshapes:\n  - {name: pow2, min_power: 6, max_power: 6}\n"
      "  - {name: random, count: 2, min: 70000, max: 70001}\n");
  EXPECT_EQ(e, "t.yaml:5:5: int8 gemm K must be < 65536 so that s32 accumulation cannot overflow");
  // linear's hidden is the shape's k: the shape of the two that the recipe's groups do not divide.
  e = error_of(
      "ops: [linear]\nquantization: int4wo-64\nshapes:\n  - name: custom\n    shapes:\n"
      "      - [16, 128, 64]\n      - [16, 96, 64]\n");
  EXPECT_EQ(e,
            "t.yaml:7:9: quant=int4wo-64: recipe int4wo-64 quantizes groups of 64 along a layer's inputs, which "
            "does not divide hidden=96");
}

// A sweep axis of an integer parameter takes integers as configs.md says: a quoted number is a
// string, refused at its place; a boolean is no integer (causal is written 0 or 1). A parameter
// that takes names (act) still takes them quoted.
TEST(Config, AQuotedNumberOrABooleanOnAnIntegerAxisIsAnError) {
  EXPECT_EQ(error_of("ops: [layernorm, attention]\nhidden: [\"64\"]\n"),
            "t.yaml:2:10: hidden: expected an integer, got the string \"64\" (write it without quotes)");
  EXPECT_EQ(error_of("ops: [add]\nbatch: [1, '2']\n"),
            "t.yaml:2:12: batch: expected an integer, got the string \"2\" (write it without quotes)");
  EXPECT_EQ(error_of("ops: [add]\nhidden: \"64\"\n"),
            "t.yaml:2:9: hidden: expected an integer, got the string \"64\" (write it without quotes)");
  EXPECT_EQ(error_of("ops: [attention]\ncausal: [false]\n"),
            "t.yaml:2:10: causal: expected an integer, got the boolean 'false' (a yes/no parameter is written 0 or 1)");
  EXPECT_EQ(error_of("ops: [attention]\ncausal: true\n"),
            "t.yaml:2:9: causal: expected an integer, got the boolean 'true' (a yes/no parameter is written 0 or 1)");
  EXPECT_EQ(error_of("ops: [attention]\nimpls: [reference]\ncausal: [0, 1]\n"), "no error");
  EXPECT_EQ(error_of("ops: [linear]\nimpls: [reference]\nact: [\"gelu\", none]\n"), "no error");
  // Optional parameters too: integers (passes), 0 / 1 (fast_accum), and a number among names (ksplit).
  EXPECT_EQ(error_of("ops: [bandwidth]\npasses: [\"2\"]\n"),
            "t.yaml:2:10: passes: expected an integer, got the string \"2\" (write it without quotes)");
  EXPECT_EQ(
      error_of("ops: [linear]\nmode: [train]\nquantization: [float8dq-row]\nfast_accum: [true]\n"),
      "t.yaml:4:14: fast_accum: expected an integer, got the boolean 'true' (a yes/no parameter is written 0 or 1)");
  EXPECT_EQ(error_of("ops: [linear]\nksplit: [auto, \"4\"]\n"),
            "t.yaml:2:16: ksplit: expected a number, got the string \"4\" (write it without quotes)");
  EXPECT_EQ(error_of("ops: [bandwidth]\nimpls: [opmeter]\npasses: [1, 2]\n"), "no error");
}

TEST(Config, WrongTypes) {
  EXPECT_TRUE(has(error_of("ops: [peak]\nthreads: two\n"), "threads: expected an integer in 1..4096, got 'two'"));
  EXPECT_TRUE(has(error_of("ops: {a: 1}\n"), "ops: expected a name or a list of names, got a mapping"));
  EXPECT_TRUE(has(error_of("ops: [peak]\nhot: maybe\n"), "hot: expected true or false"));
  EXPECT_TRUE(has(error_of("ops: [peak]\nstopping: 3\n"), "stopping: expected a mapping"));
  EXPECT_TRUE(has(error_of("ops: [peak]\nstopping: {timeout_s: soon}\n"), "stopping.timeout_s: expected a number"));
  EXPECT_TRUE(has(error_of("- a\n- b\n"), "the config: expected a mapping"));
}

TEST(Config, BadShapes) {
  auto with = [](const std::string& shapes) { return error_of("ops: [gemm]\nshapes:\n" + shapes); };
  EXPECT_TRUE(has(with("  - {name: custom, shapes: [[1024, -5, 8]]}\n"), "shape k: -5 is out of range, expected 1..1048576"));
  EXPECT_TRUE(has(with("  - {name: custom, shapes: [[0, 5, 8]]}\n"), "shape m: 0 is out of range"));
  EXPECT_TRUE(has(with("  - {name: custom, shapes: [[1, 5, 99999999999999999999999]]}\n"), "shape n: expected an integer"));
  EXPECT_TRUE(has(with("  - {name: custom, shapes: [[1, 5]]}\n"), "each shape must be a list [m, k, n]"));
  EXPECT_TRUE(has(with("  - {name: custom, shapes: []}\n"), "'shapes' must be a non-empty list"));
  EXPECT_TRUE(has(with("  - {name: pow3}\n"), "unknown shape generator 'pow3'; did you mean 'pow2'?"));
  EXPECT_TRUE(has(with("  - {min_power: 3}\n"), "missing 'name'"));
  EXPECT_TRUE(has(with("  - {name: pow2, min_power: 12, max_power: 10}\n"),
                  "pow2: empty sweep, min_power 12 is greater than max_power 10"));
  EXPECT_TRUE(has(with("  - {name: sweep, max_power: 6}\n"),
                  "sweep: empty sweep, min_power 8 (the default) is greater than max_power 6"));
  EXPECT_TRUE(has(with("  - {name: sweep, min_power: 40}\n"), "sweep.min_power: 40 is out of range"));
  EXPECT_TRUE(has(with("  - {name: pow2, step: 2}\n"), "unknown key 'step'"));
  EXPECT_TRUE(has(error_of("ops: [gemm]\n"), "ops includes gemm but there is no 'shapes' list"));
  auto e = with("  - {name: custom, shapes: [[1, -5, 8]]}\n");
  EXPECT_TRUE(has(e, "t.yaml:3:")) << e;  // the line of the bad value
}

TEST(Config, UnknownNames) {
  EXPECT_TRUE(has(error_of("ops: [gemn]\n"), "unknown op 'gemn'; did you mean 'gemm'?"));
  EXPECT_TRUE(has(error_of("ops: [peak]\nimpls: [onednnn]\n"), "unknown impl 'onednnn'; did you mean 'onednn'?"));
  EXPECT_TRUE(has(error_of("ops: [peak]\ndtypes: [bf61]\n"), "unknown dtype 'bf61'"));
  EXPECT_TRUE(has(error_of("ops: [bandwidth]\nbandwidth: {kernels: [tirad]}\n"),
                  "unknown bandwidth kernel 'tirad'; did you mean 'triad'?"));
  EXPECT_TRUE(has(error_of("ops: [bandwidth]\nbandwidth: {sizes_mib: [0]}\n"), "sizes_mib (MiB per array): 0 is out of range"));
}

TEST(Config, EmptyOrMissing) {
  EXPECT_TRUE(has(error_of(""), "the config is empty"));
  EXPECT_TRUE(has(error_of("threads: 2\n"), "missing 'ops'"));
  EXPECT_TRUE(has(error_of("ops: []\n"), "ops: the list is empty"));
  try {
    load_config_file("/nonexistent/x.yaml", 1);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(has(e.what(), "/nonexistent/x.yaml: cannot open the config file")) << e.what();
  }
}

TEST(Config, BuiltinSuitesLoad) {
  auto quick = load_suite("quick", 2);
  EXPECT_GT(quick.cases.size(), 10u);
  EXPECT_GT(load_suite("full", 2).cases.size(), quick.cases.size());
  try {
    load_suite("quik", 2);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "did you mean 'quick'?")) << e.what();
  }
}

TEST(Config, Nearest) {
  EXPECT_EQ(nearest("treads", {"threads", "dtypes"}), "threads");
  EXPECT_EQ(nearest("qqqqqq", {"threads", "dtypes"}), std::nullopt);
  EXPECT_EQ(nearest("BF16", {"fp16", "bf16", "fp32"}), "bf16");  // case is ignored
  EXPECT_EQ(nearest("Threads", {"threads", "dtypes"}), "threads");
}

TEST(Config, TensorOpAxesSweepAndDefault) {
  auto plan = load_config_text("ops: [layernorm]\nimpls: [opmeter]\nbatch: [1, 2]\nhidden: [8]\n", "t.yaml", 2);
  ASSERT_EQ(plan.cases.size(), 2u);
  EXPECT_EQ(plan.cases[0].to_string(), "layernorm/opmeter/fp32/batch=1,seq=512,hidden=8/threads=2");
  EXPECT_EQ(plan.cases[1].get("batch"), "2");
}

TEST(Config, LinearTakesMatrixShapes) {
  auto plan = load_config_text(
      "ops: [ln_linear_sigmoid]\nimpls: [onednn]\nshapes: [{name: custom, shapes: [[16, 32, 64]]}]\n", "t.yaml", 2);
  ASSERT_EQ(plan.cases.size(), 1u);
  EXPECT_EQ(plan.cases[0].params_string(), "batch=1,seq=16,hidden=32,out=64");
}

TEST(Config, NewKeysGetClearErrors) {
  // At the value, as every config mistake (the message's key=value is what locates it).
  EXPECT_TRUE(has(error_of("ops: [linear]\nact: [gelu, swishy]\n"), "t.yaml:2:13: linear act=swishy unknown"))
      << error_of("ops: [linear]\nact: [gelu, swishy]\n");
  EXPECT_TRUE(has(error_of("ops: [attention]\nstage: [all]\n"), "stage='all' unknown"));
  EXPECT_TRUE(has(error_of("ops: [conv2d]\ngroups: [3]\n"), "groups=3 must divide"));
  EXPECT_TRUE(has(error_of("ops: [softmax]\nhidden: [0]\n"), "hidden=0 out of range"));
  EXPECT_TRUE(has(error_of("ops: [softmax]\nhiden: [8]\n"), "did you mean 'hidden'"));
  EXPECT_TRUE(has(error_of("ops: [layernorm]\nbatch: [x]\n"), "not an integer")) << error_of("ops: [layernorm]\nbatch: [x]\n");
}

TEST(Config, BadDeviceKeysSayWhatIsExpected) {
  EXPECT_NE(error_of("ops: [gemm]\ndevice: gpu\n").find(":2"), std::string::npos);
  EXPECT_NE(error_of("ops: [gemm]\ndevice: gpu\n").find("unknown device 'gpu'"), std::string::npos);
  EXPECT_NE(error_of("ops: [gemm]\ngraph: 10\n").find("needs a CUDA device"), std::string::npos);
  EXPECT_NE(error_of("ops: [test_cpu_only]\ndevice: cuda:0\n").find("none of its ops has a CUDA impl"), std::string::npos);
}

// Issue 11: a VM reporting the host's 508 MiB L3 gave 2 GiB arrays. The default is capped, the
// cap is explained, and llc_bytes (config) sizes arrays by the cache the user names.
TEST(Config, BandwidthDefaultsAreCappedAndOverridable) {
  const std::size_t vm_l3 = 532676608;
  auto capped = default_bandwidth_elements(vm_l3) * sizeof(float);
  EXPECT_LE(capped, kMaxDefaultArrayBytes);
  EXPECT_GE(capped, std::min<std::size_t>(64u << 20, available_memory_bytes() / 8) - 64);
  EXPECT_NE(bandwidth_cap_note(vm_l3).find("508 MiB"), std::string::npos) << bandwidth_cap_note(vm_l3);
  EXPECT_EQ(default_bandwidth_elements(std::size_t{32} << 20) * sizeof(float), std::size_t{128} << 20);
  EXPECT_EQ(bandwidth_cap_note(std::size_t{32} << 20), "");

  auto plan = load_config_text("ops: [bandwidth]\nllc_bytes: 16777216\n", "t.yaml", 2);
  EXPECT_EQ(plan.llc_bytes, 16777216u);
  ASSERT_FALSE(plan.cases.empty());
  for (auto& c : plan.cases) EXPECT_EQ(c.get("n"), std::to_string((std::size_t{64} << 20) / 4)) << c.to_string();
  EXPECT_TRUE(has(error_of("ops: [bandwidth]\nllc_bytes: -1\n"), "llc_bytes")) << error_of("ops: [bandwidth]\nllc_bytes: -1\n");
}

TEST(Config, AnOpWithNoneOfTheDtypesAskedIsAnErrorNotAnFp32Run) {
  // It was measured as fp32 (exit 0); the --case path refuses it.
  for (const char* dtype : {"int8", "fp8"}) {
    auto e = error_of(fmt::format("ops: [linear]\ndtypes: [{}]\n", dtype));
    EXPECT_TRUE(has(e, "t.yaml:2:")) << e;  // file:line:col of the dtypes list
    EXPECT_TRUE(has(e, fmt::format("linear has no {} impl", dtype))) << e;
    EXPECT_TRUE(has(e, "take fp32")) << e;  // what its impls have
  }
  // A dtype some impl takes is measured in it.
  auto plan = load_config_text("ops: [linear]\nimpls: [onednn]\ndtypes: [bf16]\n", "t.yaml", 2);
  ASSERT_FALSE(plan.cases.empty());
  for (auto& c : plan.cases) EXPECT_EQ(c.dtype, DType::bf16);
  // Beside a dtype it has, one it lacks is left out with a note, not silently.
  plan = load_config_text("ops: [linear]\nimpls: [onednn]\ndtypes: [bf16, int8]\n", "t.yaml", 2);
  ASSERT_FALSE(plan.cases.empty());
  for (auto& c : plan.cases) EXPECT_EQ(c.dtype, DType::bf16);
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(),
                          [](const std::string& n) { return has(n, "linear has no int8 impl here: measured in bf16 only"); }))
      << fmt::format("{}", fmt::join(plan.notes, " | "));
  // Bandwidth measures bytes whatever the dtype: beside a bf16 GEMM it still runs, in fp32.
  plan = load_config_text("ops: [gemm, bandwidth]\nimpls: [onednn]\ndtypes: [bf16]\nbandwidth: {kernels: [copy], sizes_mib: [1]}\n"
                          "shapes: [{name: custom, shapes: [[8, 8, 8]]}]\n",
                          "t.yaml", 2);
  bool bandwidth = false;
  for (auto& c : plan.cases) bandwidth = bandwidth || (c.op == "bandwidth" && c.dtype == DType::fp32);
  EXPECT_TRUE(bandwidth);
}

// A few lines can ask for millions of cases (an anchored generator repeated): the shapes one list
// gives and the cases a config plans are capped, each the config's error at its place.
TEST(Config, ShapesAndPlansPastTheirCapsAreErrors) {
  auto e = error_of("ops: [gemm]\nshapes: [&g {name: random, count: 100000}, *g, *g]\n");
  EXPECT_TRUE(has(e, "shapes: 200000 shapes in all by this entry, more than the 100000 one list may give")) << e;
  YamlReader r("t.yaml");
  const YAML::Node at = YAML::Load("ops: [gemm]\n")["ops"];
  EXPECT_NO_THROW(check_plan_size(r, at, kMaxPlannedCases));
  try {
    check_plan_size(r, at, kMaxPlannedCases + 1);
    ADD_FAILURE() << "no error past the cap";
  } catch (const ConfigError& err) {
    EXPECT_TRUE(has(err.what(), "t.yaml:1:6: the config expands to more than 2000000 cases")) << err.what();
  }
}

// Nesting past yaml-cpp's depth guard says so (its own message is "bad file").
TEST(Config, DeepNestingSaysItIsTooDeep) {
  auto e = error_of("ops: " + std::string(3000, '[') + std::string(3000, ']') + "\n");
  EXPECT_TRUE(has(e, "malformed YAML: nested deeper than the reader allows")) << e.substr(0, 200);
}
