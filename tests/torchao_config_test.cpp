// torchao's microbenchmark configs read as they are (issue 29 item 4): both of the seed's examples
// (examples/torchao/) expand to the expected cases, a tiny one runs on the CPU, the CUDA cases of
// the examples are skipped here, every bad value is an error at its file:line:column, and every
// key opmeter cannot honour is a note naming it.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/linear.hpp"
#include "ops/tensor/amx.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/config_errors.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;
using opmeter::config_test_support::config_error_of;
using opmeter::config_test_support::has;

namespace {

std::string example(const std::string& name) { return std::string(opmeter_source_dir()) + "/examples/torchao/" + name; }

Plan load(const std::string& yaml) { return load_config_text(yaml, "t.yaml", 2); }

bool any_note(const Plan& p, const std::string& part) {
  return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return has(n, part); });
}
std::string notes_of(const Plan& p) { return fmt::format("{}", fmt::join(p.notes, "\n")); }

// The cases of a plan with this op, shape (m, k, n as linear's seq, hidden, out) and recipe.
std::vector<Case> cases_of(const Plan& p, int m, int k, int n, const std::string& recipe) {
  std::vector<Case> out;
  for (auto& c : p.cases)
    if (c.op == "linear" && c.get("seq") == std::to_string(m) && c.get("hidden") == std::to_string(k) &&
        c.get("out") == std::to_string(n) && linear::recipe_of(c) == recipe)
      out.push_back(c);
  return out;
}

const int kSeedShapes[3][3] = {{1024, 1024, 1024}, {2048, 4096, 1024}, {4096, 4096, 1024}};

// A minimal torchao config around one model_params entry.
std::string with_model(const std::string& model_lines, const std::string& top = "") {
  return "benchmark_mode: inference\nquantization_config_recipe_names: [baseline, int8wo]\n" + top +
         "model_params:\n  matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n" + model_lines;
}

}  // namespace

TEST(TorchaoConfig, InferenceExampleExpandsToEachRecipeAndShapeOnCuda) {
  Plan p = load_config_file(example("inference.yml"), 2, "", ConfigCode::skip);
  EXPECT_TRUE(p.profile);         // enable_profiler
  EXPECT_TRUE(p.memory_profile);  // enable_memory_profiler
  EXPECT_EQ(p.output_root, "benchmarks/microbenchmarks/results");
  for (auto& c : p.cases) {
    EXPECT_EQ(c.op, "linear") << c.to_string();
    EXPECT_EQ(c.device, "cuda:0") << c.to_string();
    EXPECT_EQ(c.dtype, DType::bf16) << c.to_string();
    EXPECT_FALSE(c.has(linear::kMode)) << c.to_string();
  }
  for (auto& s : kSeedShapes)
    for (const char* recipe : {"baseline", "int8wo", "float8wo", "float8dq-tensor"}) {
      auto cs = cases_of(p, s[0], s[1], s[2], recipe);
      ASSERT_FALSE(cs.empty()) << recipe << " " << s[0];
      // compile: max-autotune -> the worker's torch_compile_max beside opmeter's own impls.
      EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [](const Case& c) { return c.impl == "torch_compile_max"; })) << recipe;
      EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [](const Case& c) { return c.impl != "torch_compile_max"; })) << recipe;
    }
  EXPECT_EQ(cases_of(p, 2048, 4096, 1024, "int8wo").front().to_string(),
            "linear/cuda_quant/bf16/batch=1,seq=2048,hidden=4096,out=1024,act=none,quant=int8wo/device=cuda:0");
  EXPECT_TRUE(any_note(p, "torchao microbenchmark config")) << notes_of(p);
  EXPECT_TRUE(any_note(p, "enable_memory_profiler")) << notes_of(p);
  EXPECT_TRUE(any_note(p, "max-autotune runs as impl torch_compile_max")) << notes_of(p);
  EXPECT_TRUE(any_note(p, "enable_profiler: runs as --profile")) << notes_of(p);
}

TEST(TorchaoConfig, TrainingExampleExpandsToTrainCasesWithItsKnobs) {
  Plan p = load_config_file(example("training.yml"), 2, "", ConfigCode::skip);
  EXPECT_EQ(p.stopping.min_samples, 100u);  // repeat_n
  EXPECT_TRUE(p.profile);
  EXPECT_EQ(p.output_root, "benchmarks/microbenchmarks/results/training");
  for (auto& c : p.cases) {
    EXPECT_EQ(c.get(linear::kMode), linear::kTrain) << c.to_string();
    EXPECT_EQ(c.device, "cuda:0") << c.to_string();
    EXPECT_FALSE(c.has(linear::kGranularity)) << c.to_string();  // the recipe names its granularity
  }
  for (auto& s : kSeedShapes)
    for (const char* recipe : {"baseline", "float8dq-tensor", "float8dq-row"}) {
      auto cs = cases_of(p, s[0], s[1], s[2], recipe);
      ASSERT_FALSE(cs.empty()) << recipe << " " << s[0];
      // use_torch_compile: true with torch_compile_mode: default -> the worker's torch_compile.
      EXPECT_TRUE(std::any_of(cs.begin(), cs.end(), [](const Case& c) { return c.impl == "torch_compile"; })) << recipe;
    }
  // Each training case is timed as forward, backward and the whole step: the fwd/bwd/total table.
  for (const char* recipe : {"baseline", "float8dq-tensor", "float8dq-row"}) {
    auto cs = cases_of(p, 1024, 1024, 1024, recipe);
    auto with_phase = [&](const std::string& phase) {
      return std::count_if(cs.begin(), cs.end(), [&](const Case& c) { return c.get_or(linear::kPhase, "step") == phase; });
    };
    EXPECT_GT(with_phase("forward"), 0) << recipe;
    EXPECT_EQ(with_phase("forward"), with_phase("backward")) << recipe;
    EXPECT_EQ(with_phase("forward"), with_phase("step")) << recipe;
  }
  EXPECT_TRUE(any_note(p, "phase=forward, phase=backward and the whole step")) << notes_of(p);
  // scaling_granularity: tensorwise against float8dq-row's own rowwise scales is said.
  EXPECT_TRUE(any_note(p, "float8dq-row keeps its rowwise scales")) << notes_of(p);
  // The knobs at their defaults (dynamic, fast accumulation) either are cases' defaults or are noted.
  const OpDef& op = *Registry::global().op("linear");
  const bool declared = std::any_of(op.optional_params.begin(), op.optional_params.end(),
                                    [](const OptionalParam& o) { return o.key == linear::kScalingInput; });
  if (!declared) {
    EXPECT_TRUE(any_note(p, "scaling_input=dynamic (from torchao's float8 training keys)")) << notes_of(p);
  }
}

TEST(TorchaoConfig, TrainingKnobsThatDifferFromTheDefaultsBecomeCaseParams) {
  const OpDef& op = *Registry::global().op("linear");
  const bool declared = std::any_of(op.optional_params.begin(), op.optional_params.end(),
                                    [](const OptionalParam& o) { return o.key == linear::kScalingWeight; });
  Plan p = load("benchmark_mode: training\nquantization_config_recipe_names: [float8dq-tensor, baseline]\n"
                "scaling_type_weight: disabled\nuse_fast_accum: false\n"
                "model_params:\n  matrix_shapes: [{name: custom, shapes: [[16, 64, 32]]}]\n  device: cuda\n");
  for (auto& c : p.cases) {
    const bool fp8 = linear::recipe_of(c) == "float8dq-tensor";
    // Only float8 training cases carry the knobs; where linear does not take them yet, a note says so.
    EXPECT_EQ(c.has(linear::kScalingWeight), fp8 && declared) << c.to_string();
    if (declared && fp8) {
      EXPECT_EQ(c.get(linear::kScalingWeight), "disabled");
      EXPECT_EQ(c.get(linear::kFastAccum), "0");
    }
  }
  if (!declared) {
    EXPECT_TRUE(any_note(p, "scaling_weight=disabled")) << notes_of(p);
  }
}

// A block takes no float8dq: its fp8 cases are left out with that reason, and the float8 knobs
// (torchao's defaults here) get no note of their own for cases that never run.
TEST(TorchaoConfig, ARecipeTheOpRefusesGetsOneNoteNotOnePerKnob) {
  Plan p = load("benchmark_mode: training\nquantization_config_recipe_names: [baseline, float8dq-tensor]\n"
                "scaling_type_input: dynamic\nscaling_type_weight: dynamic\nuse_fast_accum: true\n"
                "model_params:\n  matrix_shapes: [{name: custom, shapes: [[4, 64, 64]]}]\n  device: cpu\n"
                "  high_precision_dtype: torch.bfloat16\n  model_type: transformer_block\n");
  EXPECT_TRUE(any_note(
      p, "quant=float8dq-tensor has no training step on transformer_block: mode=train runs the block unquantized"))
      << notes_of(p);
  EXPECT_FALSE(any_note(p, "takes no")) << notes_of(p);
  EXPECT_FALSE(p.cases.empty());
  for (auto& c : p.cases) EXPECT_FALSE(c.has(linear::kQuant)) << c.to_string();
}

TEST(TorchaoConfig, ModelParamsListShapesAndModelTypesMapOntoOps) {
  Plan p = load("quantization_config_recipe_names: [baseline, int4wo-32-hqq, float8dq]\n"
                "model_params:\n"
                "  - name: a\n    matrix_shapes: [{name: pow2, min_power: 6, max_power: 7}]\n"
                "    model_type: ln_linear_leakyrelu\n    high_precision_dtype: torch.float32\n    device: cpu\n"
                "  - name: b\n    matrix_shapes: [{name: custom, shapes: [[2, 64, 8]]}]\n    model_type: transformer_block\n"
                "    device: cpu\n");
  auto count = [&](auto pred) { return std::count_if(p.cases.begin(), p.cases.end(), pred); };
  // pow2 6..7: 64^3 and 128^3; the recipes mapped to opmeter's names.
  EXPECT_GT(count([](const Case& c) { return c.op == "ln_linear_leaky_relu" && c.get("hidden") == "128" &&
                                             c.get_or("quant", "") == "hqq-int4-32" && c.dtype == DType::fp32; }), 0) << notes_of(p);
  EXPECT_GT(count([](const Case& c) { return c.op == "ln_linear_leaky_relu" && c.get_or("quant", "") == "float8dq-tensor"; }), 0);
  EXPECT_TRUE(any_note(p, "float8dq runs as float8dq-tensor")) << notes_of(p);
  // transformer_block: batch m, 16 tokens, hidden k, 8 heads, MLP 4k.
  auto block = std::find_if(p.cases.begin(), p.cases.end(), [](const Case& c) { return c.op == "transformer_block"; });
  ASSERT_NE(block, p.cases.end()) << notes_of(p);
  EXPECT_EQ(block->get("batch"), "2");
  EXPECT_EQ(block->get("seq"), "16");
  EXPECT_EQ(block->get("hidden"), "64");
  EXPECT_EQ(block->get("heads"), "8");
  EXPECT_EQ(block->dtype, DType::bf16);  // torchao's default high_precision_dtype
}

TEST(TorchaoConfig, UnhonouredKeysAndValuesAreNotedByName) {
  Plan p = load("benchmark_mode: inference\nquantization_config_recipe_names: [baseline, int4wo-256]\n"
                "sparsity_config_recipe_names: [semi-sparse]\nscaling_type_input: dynamic\nscaling_granularity: columnwise\n"
                "model_params:\n"
                "  - name: gpu\n    matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n    device: mps\n"
                "  - name: conv\n    matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n    model_type: conv_net\n"
                "  - name: ok\n    matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n    device: cpu\n"
                "    torch_compile_mode: max-autotune\n    enable_memory_profiler: true\n");
  for (const char* part : {"int4wo-256", "sparsity_config_recipe_names", "scaling_type_input applies to float8 training",
                           "columnwise", "device mps", "model_type conv_net", "torch_compile_mode without use_torch_compile",
                           "enable_memory_profiler"})
    EXPECT_TRUE(any_note(p, part)) << part << "\n" << notes_of(p);
  EXPECT_FALSE(p.cases.empty());
}

TEST(TorchaoConfig, BadValuesAreErrorsAtTheirLine) {
  struct Bad {
    std::string yaml, where, what;
  };
  const std::vector<Bad> bad = {
      {"benchmark_mode: train\nmodel_params: {matrix_shapes: [{name: llama}]}\n", "t.yaml:1:17",
       "inference or training"},
      {with_model("", "quantization_recipes: [int8wo]\n"), "t.yaml:3:1", "unknown key 'quantization_recipes'"},
      {"quantization_config_recipe_names: [baseline, int3wo]\nmodel_params: {matrix_shapes: [{name: llama}]}\n",
       "t.yaml:1:46", "unknown quantization recipe 'int3wo'"},
      {with_model("  high_precision_dtype: torch.bf16\n"), "t.yaml:5:25", "torch.bfloat16"},
      {with_model("  high_precision_dtype:\n"), "t.yaml:", "expected a name or a list of names, got nothing"},
      {with_model("  high_precision_dtype: ''\n"), "t.yaml:5:25", "unknown dtype ''"},
      {with_model("  device: tpu\n"), "t.yaml:5:11", "device"},
      {with_model("  compile: fast\n"), "t.yaml:5:12", "torch.compile mode"},
      {with_model("  use_torch_compile: sometimes\n"), "t.yaml:5:22", "true or false"},
      {with_model("  compile: default\n  use_torch_compile: true\n"), "t.yaml:6:22", "not both"},
      {with_model("  model_typ: linear\n"), "t.yaml:5:3", "did you mean 'model_type'"},
      {with_model("", "output_dir: \"out\\nrun\"\n"), "t.yaml:3:13",
       "output_dir holds a control or invisible character (\\x0a)"},
      // A misspelt model type, beside a right one too; conv_net (torchao's, not ours) is a note.
      {with_model("  model_type: [linaer, linear]\n"), "t.yaml:5:16",
       "unknown model_type 'linaer'; did you mean 'linear'?"},
      {with_model("  model_type: transfomer_block\n"), "t.yaml:5:15", "did you mean 'transformer_block'?"},
      {with_model("  model_type: ln_linear_gleu\n"), "t.yaml:5:15",
       "unknown model_type 'ln_linear_gleu'; did you mean 'ln_linear_gelu'?"},
      {with_model("  model_type: ln_linear_mish\n"), "t.yaml:5:15", "unknown model_type 'ln_linear_mish'"},
      {with_model("", "scaling_type_input: delayed\n"), "t.yaml:3:21", "dynamic or disabled"},
      {with_model("", "use_fast_accum: maybe\n"), "t.yaml:3:17", "true or false"},
      {with_model("", "repeat_n: 0\n"), "t.yaml:3:11", "repeat_n"},
      {"model_params:\n  matrix_shapes: [{name: pow3}]\n", "t.yaml:2:26", "shape generator"},
      {"model_params: {device: cpu}\n", "t.yaml:1:15", "matrix_shapes"},
      {with_model("  enable_profiler: sometimes\n"), "t.yaml:5:20", "true or false"},
      {with_model("  enable_memory_profiler: 2\n"), "t.yaml:5:27", "true or false"},
  };
  for (auto& b : bad) {
    auto msg = config_error_of(b.yaml);
    EXPECT_TRUE(has(msg, b.where)) << b.yaml << "\n-> " << msg;
    EXPECT_TRUE(has(msg, b.what)) << b.yaml << "\n-> " << msg;
  }
}

// torchao's repeat_n: 1 is valid there: raised to opmeter's two samples, with a note.
TEST(TorchaoConfig, RepeatOfOneRunsAsTwoSamplesWithANote) {
  Plan p = load(with_model("", "repeat_n: 1\n"));
  EXPECT_EQ(p.stopping.min_samples, 2u);
  EXPECT_TRUE(any_note(p, "repeat_n: 1: opmeter takes at least 2 samples")) << notes_of(p);
}

// No CPU impl runs fp16: a recipe's case goes to an impl that runs recipes (opmeter_quant), so
// its skip says what that impl lacks, not that a plain impl runs no recipe.
TEST(TorchaoConfig, ACaseNoImplRunsHereGoesToOneThatTakesItsRecipe) {
  Plan p = load("quantization_config_recipe_names: [baseline, int8wo]\nmodel_params:\n"
                "  matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n  high_precision_dtype: torch.float16\n"
                "  device: cpu\n");
  bool quantized = false;
  for (auto& c : p.cases)
    if (c.has(linear::kQuant)) {
      quantized = true;
      EXPECT_TRUE(takes_optional_params(*Registry::global().impl(c.op, c.impl), c).ok) << c.to_string();
    }
  EXPECT_TRUE(quantized);
}

// The whole message of each refusal the test above matches only in part.
TEST(TorchaoConfig, RefusalsSayWhatIsWrongAndWhatIsExpected) {
  struct Bad {
    std::string yaml, message;
  };
  const std::vector<Bad> bad = {
      {"benchmark_mode: inference\nquantization_config_recipe_names: [baseline]\n",
       "t.yaml:1:1: missing 'model_params': the models and matrix_shapes to measure"},
      {"benchmark_mode: inference\nmodel_params: []\n", "t.yaml:2:15: model_params: the list is empty"},
      {"benchmark_mode: inference\nmodel_params: {device: cpu}\n",
       "model_params: missing 'matrix_shapes', e.g. [{name: custom, shapes: [[1024, 1024, 1024]]}]"},
      {"benchmark_mode: train\nmodel_params: {matrix_shapes: [{name: llama}]}\n",
       "benchmark_mode: 'train' unknown: expected inference or training"},
      {with_model("  device: tpu\n"),
       "device: 'tpu' unknown: expected cuda, cuda:N or cpu (mps and xpu are left out with a note)"},
      {with_model("  device: \"cuda:-1\"\n"),
       "device: 'cuda:-1' unknown: expected cuda, cuda:N or cpu (mps and xpu are left out with a note)"},
      {with_model("  compile: fast\n"),
       "compile: 'fast' is not a torch.compile mode: expected default, max-autotune, max-autotune-no-cudagraphs, "
       "reduce-overhead or false"},
      {with_model("", "scaling_granularity: diagonal\n"),
       "scaling_granularity: 'diagonal' unknown: expected tensorwise or rowwise"},
      {with_model("  device: mps\n"),
       "the torchao config expands to no cases: model_params: device mps is not measured by opmeter (cpu, cuda): left "
       "out"},
  };
  for (auto& b : bad) {
    auto msg = config_error_of(b.yaml);
    EXPECT_TRUE(has(msg, b.message)) << b.yaml << "\n-> " << msg;
  }
}

// A config that expands to no cases is reported at what its first reason leaves out (a device,
// a model_type, a matrix_shapes entry, in the entry that has it), as opmeter's own configs are at
// the value, not at `model_params`.
TEST(TorchaoConfig, NoCasesIsReportedAtWhatTheFirstReasonLeavesOut) {
  // The first device of the list.
  EXPECT_EQ(config_error_of(with_model("  device: [mps, xpu]\n")),
            "t.yaml:5:12: the torchao config expands to no cases: model_params: device mps is not measured by "
            "opmeter (cpu, cuda): left out; model_params: device xpu is not measured by opmeter (cpu, cuda): left out");
  // The custom shape the op refuses, the first of two.
  EXPECT_EQ(config_error_of("benchmark_mode: inference\nmodel_params:\n  - name: block\n    matrix_shapes: [{name: "
                            "custom, shapes: [[4, 60, 32], [4, 68, 32]]}]\n    model_type: transformer_block\n"
                            "    device: cpu\n"),
            "t.yaml:4:45: the torchao config expands to no cases: quantization_config_recipe_names is not given: "
            "the baseline (no quantization) alone is measured; transformer_block of shape [4, 60, 32]: "
            "transformer_block hidden=60 is not divisible by heads=8: each head takes hidden / heads columns: left "
            "out; transformer_block of shape [4, 68, 32]: transformer_block hidden=68 is not divisible by heads=8: "
            "each head takes hidden / heads columns: left out");
  // The named entry's model_type, before the next entry's shape.
  EXPECT_EQ(config_error_of("benchmark_mode: inference\nquantization_config_recipe_names: [baseline]\nmodel_params:\n"
                            "  - name: a\n    matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n"
                            "    model_type: [conv_net]\n"
                            "  - name: b\n    matrix_shapes: [{name: custom, shapes: [[4, 60, 32]]}]\n"
                            "    model_type: transformer_block\n    device: cpu\n"),
            "t.yaml:6:18: the torchao config expands to no cases: model_params a: model_type conv_net has no "
            "opmeter op (linear, ln_linear_<act>, transformer_block): left out; transformer_block of shape [4, 60, "
            "32]: transformer_block hidden=60 is not divisible by heads=8: each head takes hidden / heads columns: "
            "left out");
}

TEST(TorchaoConfigCli, TinyCpuConfigRunsIntoItsOutputDirWithNotesInRunJson) {
  auto dir = temp_dir("torchao_cpu");
  auto cfg = write(dir, "micro.yml",
                   fmt::format("benchmark_mode: inference\nquantization_config_recipe_names: [baseline, int8wo, int4wo-32-hqq, "
                               "float8dq-tensor]\noutput_dir: {}\nmodel_params:\n  matrix_shapes: [{{name: custom, shapes: "
                               "[[4, 64, 32]]}}]\n  device: cpu\n  model_type: ln_linear_relu\n  enable_memory_profiler: true\n",
                               (dir / "results").string()));
  auto out = cli("run " + cfg.string() + " --samples 3 --warmup 1 --threads 1 --no-report");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "enable_memory_profiler")) << out.text;  // the note, printed
  std::vector<fs::path> runs(fs::directory_iterator(dir / "results"), fs::directory_iterator());
  ASSERT_EQ(runs.size(), 1u);  // output_dir/<timestamp>
  auto results = read_jsonl((runs[0] / "results.jsonl").string());
  int ok = 0, skipped = 0;
  for (auto& r : results) {
    if (r.kase.op != "ln_linear_relu") continue;
    if (linear::recipe_of(r.kase) == "float8dq-tensor") {
      EXPECT_EQ(r.status, Status::skipped) << r.case_string;  // no fp8 GEMM on CPUs
      ++skipped;
      continue;
    }
    // bf16 `opmeter` runs on the AMX GEMM at multiples of 32 rows only: 4 rows leave it out of
    // the plan, as every impl that refuses a case on this host.
    EXPECT_NE(r.kase.impl, "opmeter") << r.case_string << ": " << r.reason;
    // Where oneDNN has no bf16 (AVX2 CPUs), its impls are skipped saying so; opmeter_gemv runs.
    if (opmeter::testing::skipped_for_want_of_onednn_bf16(r, r.kase.impl.rfind("onednn", 0) == 0,
                                                          r.kase.dtype == DType::bf16))
      continue;
    EXPECT_EQ(r.status, Status::ok) << r.case_string << ": " << r.reason;
    if (r.kase.has("quant")) {
      EXPECT_TRUE(r.metrics.count("sqnr_db")) << r.case_string;
    }
    ++ok;
  }
  EXPECT_GE(ok, 3);
  EXPECT_EQ(skipped, 1);
  auto run = nlohmann::json::parse(std::ifstream(runs[0] / "run.json"));
  EXPECT_TRUE(has(run["run"]["notes"].dump(), "enable_memory_profiler")) << run.dump(2);
  EXPECT_EQ(run["run"].value("memory_profile", false), true) << run.dump(2);  // as --memory-profile
}

TEST(TorchaoConfig, HostImplsThatRefuseACaseHereAreLeftOut) {
  // 4 rows: no multiple of 32 (bf16 `opmeter` on the AMX GEMM); 64 rows: past opmeter_gemv's
  // decode rows. The plan keeps only what runs here.
  auto p = load("benchmark_mode: inference\nquantization_config_recipe_names: [baseline]\n"
                "model_params:\n  matrix_shapes: [{name: custom, shapes: [[4, 64, 32], [64, 64, 32]]}]\n  device: cpu\n");
  auto& reg = Registry::global();
  for (auto& c : p.cases)
    if (c.op == "linear") {
      auto s = reg.impl(c.op, c.impl)->supports(c);
      EXPECT_TRUE(s.ok) << c.to_string() << ": " << s.reason;
    }
  auto has_impl = [&](int rows, const std::string& impl) {
    auto own = cases_of(p, rows, 64, 32, "baseline");
    return std::any_of(own.begin(), own.end(), [&](const Case& c) { return c.impl == impl; });
  };
  // oneDNN where it has bf16 (the config's default high_precision_dtype); else left out, saying so.
  EXPECT_EQ(has_impl(4, "onednn") && has_impl(64, "onednn"), opmeter::testing::onednn_has_bf16()) << notes_of(p);
  if (!opmeter::testing::onednn_has_bf16()) {
    EXPECT_TRUE(any_note(p, "onednn left out here: oneDNN has no bf16 primitives on this CPU")) << notes_of(p);
  }
  EXPECT_FALSE(has_impl(4, "opmeter"));
  EXPECT_FALSE(has_impl(64, "opmeter_gemv"));
  EXPECT_EQ(has_impl(64, "opmeter"), amx::bf16_usable());  // kept where it runs
  // Each left-out impl is a note with its reason.
  EXPECT_TRUE(any_note(p, "opmeter_gemv left out here")) << notes_of(p);
  EXPECT_TRUE(any_note(p, "opmeter_gemv is a GEMV for decode") || any_note(p, "opmeter_gemv needs AVX2 and FMA, or AVX512_BF16"))
      << notes_of(p);  // the first reason that holds here
}

TEST(TorchaoConfigCli, SeedExamplesRunUnmodifiedWithTheirCudaCasesSkippedHere) {
  for (const char* name : {"inference.yml", "training.yml"}) {
    auto dir = temp_dir(std::string("torchao_example_") + name);
    auto dry = cli("run " + example(name) + " --dry-run");
    ASSERT_EQ(dry.code, 0) << dry.text;
    EXPECT_TRUE(has(dry.text, "/device=cuda:0")) << dry.text;
    // A real run (--out wins over output_dir). Without a GPU, as here, every CUDA case is skipped
    // with its reason and the run completes; with one they run.
    auto out = cli("run " + example(name) + " --out " + (dir / "res").string() + " --no-report");
    ASSERT_EQ(out.code, 0) << out.text;
    auto results = read_jsonl((dir / "res" / "results.jsonl").string());
    EXPECT_GT(results.size(), 9u);  // three shapes, three or four recipes
    for (auto& r : results) {
      EXPECT_EQ(r.kase.device, "cuda:0") << r.case_string;
      if (r.status == Status::skipped) {
        EXPECT_FALSE(r.reason.empty()) << r.case_string;
      }
    }
    // --device replaces the config's devices.
    auto cpu = cli("run " + example(name) + " --device cpu --dry-run");
    ASSERT_EQ(cpu.code, 0) << cpu.text;
    EXPECT_FALSE(has(cpu.text, "device=cuda:0")) << cpu.text;
  }
}

TEST(TorchaoConfigCli, TinyTrainingConfigGivesTheFwdBwdTotalTable) {
  auto dir = temp_dir("torchao_training_cpu");
  auto cfg = write(dir, "train.yml",
                   "benchmark_mode: training\nquantization_config_recipe_names: [baseline, float8dq-tensor]\n"
                   "scaling_type_weight: disabled\nmodel_params:\n  - name: tiny\n    matrix_shapes: [{name: custom, "
                   "shapes: [[8, 32, 16]]}]\n    high_precision_dtype: torch.float32\n    device: cpu\n");
  auto dry = cli("run " + cfg.string() + " --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.text;
  for (const char* part : {"mode=train,phase=forward", "mode=train,phase=backward", "act=none,mode=train/",
                           "quant=float8dq-tensor,mode=train,phase=forward,scaling_weight=disabled"})
    EXPECT_TRUE(has(dry.text, part)) << part << "\n" << dry.text;

  auto out = cli("run " + cfg.string() + " --out " + (dir / "res").string() + " --samples 3 --warmup 1 --threads 1 --no-report");
  ASSERT_EQ(out.code, 0) << out.text;
  auto results = read_jsonl((dir / "res" / "results.jsonl").string());
  std::map<std::string, double> baseline;  // phase -> median seconds
  int fp8_skipped = 0;
  for (auto& r : results) {
    if (r.kase.op != "linear") continue;
    if (linear::recipe_of(r.kase) == "float8dq-tensor") {
      EXPECT_EQ(r.status, Status::skipped) << r.case_string;  // no fp8 training on CPUs
      fp8_skipped += r.status == Status::skipped;
      continue;
    }
    ASSERT_EQ(r.status, Status::ok) << r.case_string << ": " << r.reason;
    baseline[r.kase.get_or(linear::kPhase, "step")] = r.summary.median;
  }
  EXPECT_EQ(fp8_skipped, 3);
  ASSERT_EQ(baseline.size(), 3u);
  // The table joins the three phases of the baseline into one row: fwd, bwd and total.
  std::ifstream md(dir / "res" / "results.md");
  std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(has(text, "| fwd | bwd | total |")) << text;
  auto row = text.find("| linear batch=1,seq=8,hidden=32,out=16,act=none | fp32 | cpu x1 | baseline |");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_EQ(std::count(line.begin(), line.end(), '%'), 3) << line;  // fwd, bwd and total, each with its % of peak
}

// torchao's runner measures the baseline beside the recipes, listed or not; its sparsity list may
// hold null (no sparsity) or be empty, its default.
TEST(TorchaoConfig, TheBaselineIsAlwaysMeasuredAndNullOrEmptySparsityIsNone) {
  const std::string model = "model_params:\n  matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n  device: cpu\n";
  Plan p = load(
      "benchmark_mode: inference\nquantization_config_recipe_names: [int8wo]\n"
      "sparsity_config_recipe_names: [null, semi-sparse]\n" +
      model);
  EXPECT_FALSE(cases_of(p, 4, 64, 32, "baseline").empty()) << notes_of(p);
  EXPECT_FALSE(cases_of(p, 4, 64, 32, "int8wo").empty()) << notes_of(p);
  EXPECT_TRUE(any_note(p, "has no baseline: measured anyway")) << notes_of(p);
  EXPECT_TRUE(any_note(p, "sparsity_config_recipe_names (semi-sparse): opmeter has no sparsity recipes"))
      << notes_of(p);
  Plan q = load("benchmark_mode: inference\nquantization_config_recipe_names: []\nsparsity_config_recipe_names: []\n" +
                model);
  EXPECT_FALSE(cases_of(q, 4, 64, 32, "baseline").empty()) << notes_of(q);
  EXPECT_TRUE(cases_of(q, 4, 64, 32, "int8wo").empty());
  EXPECT_TRUE(any_note(q, "quantization_config_recipe_names is empty")) << notes_of(q);
  EXPECT_FALSE(any_note(q, "sparsity")) << notes_of(q);
  // Without quantization_config_recipe_names the sparsity list is still said to be left out.
  Plan sparse_only = load("benchmark_mode: inference\nsparsity_config_recipe_names: [semi-sparse]\n" + model);
  EXPECT_TRUE(any_note(sparse_only, "sparsity_config_recipe_names (semi-sparse): opmeter has no sparsity recipes"))
      << notes_of(sparse_only);
  Plan listed = load(with_model("  device: cpu\n"));  // baseline listed: no note
  EXPECT_FALSE(any_note(listed, "has no baseline")) << notes_of(listed);
}

// torchao's own test config puts `sparsity` in model_params: a note, the cases measured dense.
TEST(TorchaoConfig, SparsityInModelParamsIsANoteAndTheCasesRunDense) {
  Plan p = load(with_model("  device: cpu\n  sparsity: \"2:4\"\n"));
  EXPECT_FALSE(cases_of(p, 4, 64, 32, "int8wo").empty()) << notes_of(p);
  EXPECT_TRUE(any_note(p, "model_params: sparsity 2:4: opmeter has no sparse kernels; its cases are measured dense"))
      << notes_of(p);
  for (const char* none : {"null", "None"}) {
    Plan q = load(with_model(fmt::format("  device: cpu\n  sparsity: {}\n", none)));
    EXPECT_FALSE(any_note(q, "sparse kernels")) << none << "\n" << notes_of(q);
  }
}

// A quoted boolean is a string (Python's bool() of "false" is True): an error, not a guess.
TEST(TorchaoConfig, QuotedBooleansAreErrors) {
  for (const char* value : {"\"false\"", "'no'", "\"true\"", "n", "Y"}) {
    auto msg = config_error_of(with_model(fmt::format("  enable_profiler: {}\n", value)));
    EXPECT_TRUE(has(msg, "t.yaml:5:20")) << msg;
    EXPECT_TRUE(has(msg, "enable_profiler: expected true or false, got ")) << msg;
    EXPECT_TRUE(has(msg, "string")) << msg;
  }
  auto quoted_number =
      config_error_of("model_params:\n  matrix_shapes: [{name: custom, shapes: [[1, \"128\", 64]]}]\n  device: cpu\n");
  EXPECT_TRUE(has(quoted_number, "t.yaml:2:47")) << quoted_number;
  EXPECT_TRUE(has(quoted_number, "expected an integer, got the string \"128\" (write it without quotes)"))
      << quoted_number;
  auto msg = config_error_of(with_model("", "use_fast_accum: \"yes\"\n"));
  EXPECT_TRUE(has(msg, "t.yaml:3:17")) << msg;
  EXPECT_TRUE(has(msg, "got the string \"yes\" (write it without quotes)")) << msg;
  EXPECT_TRUE(load(with_model("  enable_profiler: false\n")).cases.size() > 0);
}

// Cases that two shapes or two entries give are measured once, with a note naming one of them;
// model types that opmeter maps onto another op say so.
TEST(TorchaoConfig, CasesPlannedTwiceAndSubstitutedModelTypesAreNoted) {
  Plan p = load(
      "benchmark_mode: inference\nquantization_config_recipe_names: [baseline]\nmodel_params:\n"
      "  - name: a\n    matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n    device: cpu\n"
      "  - name: b\n    matrix_shapes: [{name: custom, shapes: [[4, 64, 32], [4, 64, 32]]}]\n    device: cpu\n");
  const auto planned = cases_of(p, 4, 64, 32, "baseline");
  ASSERT_FALSE(planned.empty()) << notes_of(p);
  std::set<std::string> unique;
  for (auto& c : planned) unique.insert(c.to_string());
  EXPECT_EQ(unique.size(), planned.size());
  EXPECT_TRUE(any_note(p, fmt::format("model_params b: {} cases planned again", 2 * planned.size()))) << notes_of(p);
  EXPECT_TRUE(any_note(p, "e.g. linear/")) << notes_of(p);
  EXPECT_FALSE(any_note(p, "model_params a:")) << notes_of(p);

  Plan block = load(
      "quantization_config_recipe_names: [baseline]\nmodel_params:\n"
      "  matrix_shapes: [{name: custom, shapes: [[1, 128, 64], [1, 128, 32]]}]\n  device: cpu\n"
      "  model_type: transformer_block\n");
  EXPECT_TRUE(any_note(block, "planned again")) << notes_of(block);
  EXPECT_TRUE(any_note(block, "n is unused)")) << notes_of(block);
  EXPECT_FALSE(any_note(p, "n is unused")) << notes_of(p);
  Plan ln = load(with_model("  device: cpu\n  model_type: ln_linear\n"));
  EXPECT_TRUE(any_note(ln, "model_type ln_linear runs as ln_linear_relu")) << notes_of(ln);
}

// torchao's recipes that opmeter lacks are notes that name them; a name neither knows, or int4wo
// without its group size, is an error at its line.
TEST(TorchaoConfig, TorchaosOtherRecipesAreNotedAndLeftOut) {
  Plan p = load(
      "quantization_config_recipe_names: [baseline, int8wo, int8dq_prefill_wo_decode, marlin-qqq, fp6, "
      "uintx-2-64-hqq, int8_dynamic_activation_intx_weight-4-64-1, gemlitewo-4-64, int4wo-128-gptq, "
      "float8_a1x128_w128x128, codebook-32, autoround, spinquant]\n"
      "model_params:\n  matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n  device: cpu\n");
  EXPECT_FALSE(cases_of(p, 4, 64, 32, "int8wo").empty()) << notes_of(p);
  for (const char* name :
       {"int8dq_prefill_wo_decode", "marlin-qqq", "fp6", "uintx-2-64-hqq", "int8_dynamic_activation_intx_weight-4-64-1",
        "gemlitewo-4-64", "int4wo-128-gptq", "float8_a1x128_w128x128", "codebook-32", "autoround", "spinquant"})
    EXPECT_TRUE(any_note(p, fmt::format("recipe {} (", name))) << name << "\n" << notes_of(p);
  EXPECT_TRUE(any_note(p, "is torchao's: opmeter has no such recipe; left out")) << notes_of(p);
  for (const auto& c : p.cases)
    EXPECT_TRUE(has(c.to_string(), "quant=int8wo") || !c.has(linear::kQuant)) << c.to_string();
  const std::string shapes = "model_params: {matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]}\n";
  auto msg = config_error_of("quantization_config_recipe_names: [baseline, int4wo]\n" + shapes);
  EXPECT_TRUE(has(msg, "t.yaml:1:46")) << msg;
  EXPECT_TRUE(has(msg, "quantization recipe 'int4wo' needs its group size, e.g. int4wo-64 or int4wo-128")) << msg;
  msg = config_error_of("quantization_config_recipe_names: [int4wo-hqq]\n" + shapes);
  EXPECT_TRUE(has(msg, "e.g. int4wo-64 or int4wo-128-hqq")) << msg;
  msg = config_error_of("quantization_config_recipe_names: [marlin-x]\n" + shapes);
  EXPECT_TRUE(has(msg, "unknown quantization recipe 'marlin-x'")) << msg;
}

// YAML merge keys, as PyYAML reads torchao's configs: an entry takes its anchor's keys, its own
// keys winning; a merge of anything but mappings is an error at its line.
TEST(TorchaoConfig, MergeKeysAddTheAnchorsKeys) {
  Plan p = load(
      "quantization_config_recipe_names: [baseline]\nmodel_params:\n"
      "  - &a\n    name: a\n    device: cpu\n    high_precision_dtype: torch.bfloat16\n"
      "    matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n"
      "  - <<: *a\n    name: b\n    high_precision_dtype: torch.float32\n");
  std::set<DType> dtypes;
  for (auto& c : cases_of(p, 4, 64, 32, "baseline")) dtypes.insert(c.dtype);
  EXPECT_EQ(dtypes, (std::set<DType>{DType::bf16, DType::fp32})) << notes_of(p);
  auto msg = config_error_of(
      "quantization_config_recipe_names: [baseline]\nmodel_params:\n  <<: 5\n"
      "  matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n");
  EXPECT_TRUE(has(msg, "t.yaml:3:7")) << msg;
  EXPECT_TRUE(has(msg, "a merge key (<<) takes a mapping or a list of mappings")) << msg;
  msg = config_error_of(
      "x: &x {device: cpu}\nquantization_config_recipe_names: [baseline]\nmodel_params:\n"
      "  <<: [*x,\n      7]\n  matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]\n");
  EXPECT_TRUE(has(msg, "t.yaml:5:7")) << msg;  // at the element that is no mapping
  // An empty list merges nothing; a source listed twice, once; an anchor's own merge is resolved
  // before the entry that merges it.
  Plan q = load(
      "quantization_config_recipe_names: [baseline]\nmodel_params:\n"
      "  - &a {name: a, device: cpu, matrix_shapes: [{name: custom, shapes: [[4, 64, 32]]}]}\n"
      "  - &b {<<: [*a, *a], name: b, high_precision_dtype: torch.float32}\n"
      "  - {<<: *b, name: c, model_type: ln_linear_gelu}\n"
      "  - {<<: [], name: d, device: cpu, matrix_shapes: [{name: custom, shapes: [[4, 64, 16]]}]}\n");
  std::set<std::string> ln;
  for (auto& c : q.cases)
    if (c.op == "ln_linear_gelu") ln.insert(std::string(to_string(c.dtype)));
  EXPECT_EQ(ln, (std::set<std::string>{"fp32"})) << notes_of(q);
  EXPECT_FALSE(cases_of(q, 4, 64, 16, "baseline").empty()) << notes_of(q);
}

// A dtype no impl here runs (fp16 training on the CPU) is said when planned, naming who runs it;
// its cases are planned and skipped, as an opmeter config's would be.
TEST(TorchaoConfig, ADtypeNoImplRunsHereIsNotedWithWhoRunsIt) {
  Plan p = load(
      "benchmark_mode: training\nquantization_config_recipe_names: [baseline]\nmodel_params:\n"
      "  - name: t\n    matrix_shapes: [{name: custom, shapes: [[16, 64, 64]]}]\n"
      "    high_precision_dtype: torch.float16\n    device: cpu\n    model_type: linear\n");
  EXPECT_TRUE(any_note(p, "model_params t: no linear impl runs fp16 training here: its cases are planned and skipped"))
      << notes_of(p);
  EXPECT_TRUE(any_note(p, "(impls that run it: cublaslt_train (on cuda), torch")) << notes_of(p);
  EXPECT_EQ(cases_of(p, 16, 64, 64, "baseline").size(), 3u) << notes_of(p);  // fwd, bwd, step
}
