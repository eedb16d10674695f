// Pipelines in configs: users' layers, errors at the node, impl choice per layer, the fallback
// rounds and the --pipeline flag.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "config/config.hpp"
#include "config/pipeline_flags.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "pipeline/pipeline_rounds.hpp"
#include "tests/config_errors.hpp"

using namespace opmeter;

namespace {

std::string error_of(const std::string& yaml) { return config_test_support::config_error_of(yaml, "p.yaml"); }
using config_test_support::has;

const char* kTwoLayers = R"(
pipelines:
  - name: tiny
    samples: 4
    layers:
      - {label: fc1, op: linear, batch: 4, seq: 1, hidden: 64, out: 32, act: relu}
      - {label: res, op: add, batch: 4, seq: 1, hidden: 32, count: 3}
      - {label: res2, op: add, batch: 4, seq: 1, hidden: 32}
)";

}  // namespace

// A pipeline runs at one thread count: with threads: [1, 2] it takes the first, and says so.
TEST(PipelineConfig, AThreadsListRunsPipelinesAtItsFirstCountWithANote) {
  auto plan = load_config_text(std::string(kTwoLayers) + "threads: [1, 2]\n", "p.yaml", 2);
  ASSERT_EQ(plan.pipelines.size(), 1u);
  EXPECT_EQ(plan.pipelines[0].layer_case(0).threads, 1);
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return has(n, "pipelines run with threads=1, the first of threads: [1, 2]");
  })) << fmt::format("{}", fmt::join(plan.notes, "\n"));
  auto one = load_config_text(std::string(kTwoLayers) + "threads: 2\n", "p.yaml", 2);
  EXPECT_EQ(one.pipelines[0].layer_case(0).threads, 2);
  EXPECT_TRUE(std::none_of(one.notes.begin(), one.notes.end(),
                           [](const std::string& n) { return has(n, "pipelines run with"); }));
}

TEST(PipelineConfig, UsersPipelineBecomesOneCasePerDistinctLayer) {
  auto plan = load_config_text(kTwoLayers, "p.yaml", 2);
  ASSERT_EQ(plan.pipelines.size(), 1u);
  const auto& p = plan.pipelines[0];
  ASSERT_EQ(p.pipeline.layers.size(), 3u);
  EXPECT_EQ(p.pipeline.layers[1].count, 3u);
  EXPECT_DOUBLE_EQ(p.pipeline.samples, 4);
  // res and res2 are the same case: measured once.
  EXPECT_EQ(plan.cases.size(), 2u);
  EXPECT_EQ(p.layer_case(1).to_string(), p.layer_case(2).to_string());
  // linear's cost: 64 x 32 weights + 32 biases; 4 rows of 64 x 32 MACs.
  EXPECT_DOUBLE_EQ(p.pipeline.layers[0].cost.params, 64 * 32 + 32);
  EXPECT_DOUBLE_EQ(p.pipeline.total_macs(), 4.0 * 64 * 32);
  EXPECT_FALSE(p.end_to_end);  // only built-in pipelines have a PyTorch model
  // Own kernels first on the CPU.
  EXPECT_EQ(p.layer_case(0).impl, "opmeter");
  EXPECT_EQ(p.layer_case(0).threads, 2);
}

TEST(PipelineConfig, ImplsListIsThePreferenceOrder) {
  auto plan = load_config_text(std::string("impls: [onednn]\n") + kTwoLayers, "p.yaml", 2);
  const auto& p = plan.pipelines[0];
  EXPECT_EQ(p.layer_case(0).impl, "onednn");   // linear has a oneDNN impl
  EXPECT_EQ(p.layer_case(1).impl, "opmeter");  // add has none: opmeter's defaults follow
}

TEST(PipelineConfig, SkippedLayerMovesToItsNextImpl) {
  auto plan = load_config_text(kTwoLayers, "p.yaml", 2);
  auto pipelines = plan.pipelines;
  ASSERT_GE(pipelines[0].candidates[0].size(), 2u);
  Result skipped = unmeasured_result(pipelines[0].layer_case(0), Status::skipped, "not here");
  std::vector<Result> results = {skipped};
  EXPECT_TRUE(pipeline::advance_skipped(pipelines, results));
  EXPECT_EQ(pipelines[0].layer_case(0).impl, pipelines[0].candidates[0][1]);
  // The new case is among the pipeline's cases now, and nothing maps to the old result.
  auto cases = pipeline::pipeline_cases(pipelines);
  EXPECT_EQ(cases[0].impl, pipelines[0].candidates[0][1]);
  EXPECT_EQ(pipeline::layer_results(pipelines[0], results)[0], nullptr);
  // A failed (not skipped) layer stays: wrong is wrong, not a reason to try another impl.
  auto again = plan.pipelines;
  std::vector<Result> failed = {unmeasured_result(again[0].layer_case(0), Status::failed, "wrong")};
  EXPECT_FALSE(pipeline::advance_skipped(again, failed));
  EXPECT_NE(pipeline::layer_results(again[0], failed)[0], nullptr);
}

// A layer the run has no result for (--exclude) names the case it was planned as, with its impl
// and threads, not the layer's bare case (no impl, threads=1), in pipelines.json, CSV and log.
TEST(PipelineConfig, ALayerWithoutAResultNamesItsPlannedCase) {
  auto plan = load_config_text(std::string(kTwoLayers) + "threads: 2\n", "p.yaml", 2);
  const auto& p = plan.pipelines[0];
  pipeline::RoundResults round;  // only res was measured
  round.results.push_back(unmeasured_result(p.layer_case(1), Status::skipped, "not here"));
  auto s = pipeline::summarize_pipelines(plan.pipelines, round);
  ASSERT_EQ(s.size(), 1u);
  const auto& fc1 = s[0].layers[0];
  EXPECT_EQ(fc1.status, pipeline::kNotMeasured);
  const Case c = parse_case(fc1.case_string);
  EXPECT_EQ(c.op, "linear");
  EXPECT_EQ(c.impl, "opmeter");
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.get("hidden"), "64");
  EXPECT_TRUE(fc1.impl.empty());  // no impl ran it
}

TEST(PipelineConfig, BadPipelinesAreReportedAtTheirNode) {
  EXPECT_TRUE(has(error_of("pipelines: [resnet_18x]\n"), "unknown pipeline 'resnet_18x'")) << error_of("pipelines: [resnet_18x]\n");
  EXPECT_TRUE(has(error_of("pipelines: []\n"), "'pipelines' is empty"));
  EXPECT_TRUE(has(error_of("pipelines:\n  - {batch: 2}\n"), "a pipeline needs a 'name'"));
  auto unknown_op = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: a, op: conv3d}\n");
  EXPECT_TRUE(has(unknown_op, "layer 'a': unknown op 'conv3d'")) << unknown_op;
  EXPECT_TRUE(has(unknown_op, "p.yaml:4:")) << unknown_op;
  auto bad_param = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: a, op: add, hiden: 3}\n");
  EXPECT_TRUE(has(bad_param, "unknown add parameter 'hiden'; did you mean 'hidden'?")) << bad_param;
  auto bad_value = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: a, op: add, hidden: 0}\n");
  EXPECT_TRUE(has(bad_value, "hidden=0 out of range")) << bad_value;
  auto twice = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: a, op: add}\n      - {label: a, op: relu}\n");
  EXPECT_TRUE(has(twice, "layer label 'a' appears twice")) << twice;
  EXPECT_TRUE(has(error_of("pipelines:\n  - {name: x, layers: []}\n"), "'layers' must be a non-empty list"));
  EXPECT_TRUE(has(error_of("pipelines:\n  - name: x\n    layers:\n      - {op: add}\n"), "needs 'label' and 'op'"));
  EXPECT_TRUE(has(error_of("pipelines:\n  - name: x\n    layers:\n      - {label: a, op: add, count: 0}\n"), "count"));
  EXPECT_TRUE(has(error_of("pipelines:\n  - name: x\n    extra: 1\n    layers:\n      - {label: a, op: add}\n"),
                  "unknown key 'extra'"));
  EXPECT_TRUE(has(error_of("{}\n"), "missing 'ops'"));
  // A key that is a list, not a name: the config's error at its place, not yaml-cpp's (exit 3).
  auto list_key = error_of("pipelines:\n  - {name: resnet18, [a]: 1}\n");
  EXPECT_TRUE(has(list_key, "p.yaml:2:22: a key: expected a name, got a list")) << list_key;
  list_key = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: a, op: add, [x]: 1}\n");
  EXPECT_TRUE(has(list_key, "p.yaml:4:29: a key: expected a name, got a list")) << list_key;
}

TEST(PipelineConfig, PipelineFlagsAreReadIntoNameParamsAndDtype) {
  using Params = std::vector<std::pair<std::string, std::string>>;
  auto resnet = parse_pipeline_flag("resnet50:batch=64,image=160");
  EXPECT_EQ(resnet.name, "resnet50");
  EXPECT_EQ(resnet.params, (Params{{"batch", "64"}, {"image", "160"}}));
  EXPECT_EQ(resnet.dtype, DType::fp32);
  auto vit = parse_pipeline_flag("vit_b_16:dtype=bf16");
  EXPECT_EQ(vit.name, "vit_b_16");
  EXPECT_TRUE(vit.params.empty());
  EXPECT_EQ(vit.dtype, DType::bf16);
  EXPECT_EQ(parse_pipeline_flag("resnet18").name, "resnet18");
  for (const char* bad : {"", ":batch=2", "resnet50:batch", "resnet50:batch=", "resnet50:=3", "resnet50:a=1,,b=2",
                          "res net", "resnet50:batch={2}", "resnet18:batch=1,batch=2", "resnet18:dtype=fp7"}) {
    try {
      parse_pipeline_flag(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_TRUE(has(e.what(), "--pipeline")) << e.what();
    }
  }
}

// Each flag's dtype is its own: a dtype given to one pipeline is not every pipeline's (it was,
// through the config text the flags once became), and one pipeline may run in two dtypes.
TEST(PipelineConfig, EachPipelineFlagRunsInItsOwnDtype) {
  auto plan = load_pipeline_flags({"vit_b_16:dtype=bf16", "resnet18"}, 1, "");
  ASSERT_EQ(plan.pipelines.size(), 2u);
  EXPECT_EQ(plan.pipelines[0].pipeline.dtype, DType::bf16);
  EXPECT_EQ(plan.pipelines[1].pipeline.dtype, DType::fp32);
  auto both = load_pipeline_flags({"resnet18:dtype=fp32", "resnet18:dtype=bf16"}, 1, "");
  ASSERT_EQ(both.pipelines.size(), 2u);
  EXPECT_EQ(both.pipelines[1].layer_case(0).dtype, DType::bf16);
  EXPECT_EQ(plan.source, "--pipeline");
  try {
    load_pipeline_flags({"resnet18:batch=1", "resnet18"}, 1, "");
    ADD_FAILURE() << "the same pipeline twice was accepted";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "--pipeline 'resnet18': pipeline 'resnet18' is listed twice with the same parameters"))
        << e.what();
  }
}

// A layer's impls: those named first, then the op's by ImplDef::preference, best first; an impl
// with none (the fp64 reference) only when named.
TEST(PipelineConfig, LayersTryTheOpsImplsByTheirDeclaredPreference) {
  auto plan = load_config_text(kTwoLayers, "p.yaml", 2);
  const auto& names = plan.pipelines[0].candidates[0];  // linear
  ASSERT_FALSE(names.empty());
  auto& reg = Registry::global();
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_GT(reg.impl("linear", names[i])->preference, 0) << names[i];
    if (i) {
      EXPECT_GE(reg.impl("linear", names[i - 1])->preference, reg.impl("linear", names[i])->preference);
    }
  }
  EXPECT_EQ(names.front(), "opmeter");  // own kernels first
  auto named = load_config_text(std::string("impls: [reference]\n") + kTwoLayers, "p.yaml", 2);
  if (reg.impl("linear", "reference")) {
    EXPECT_EQ(named.pipelines[0].candidates[0].front(), "reference");
  }
}

// A model's end-to-end scale is declared by the model (PipelineDef::end_to_end_scale), not
// recognised by its name: only OPT's names were scaled before (issue 30 item 2).
const pipeline::Registrar half_model({.name = "test_half_model",
                                      .summary = "a test's: resnet18 whose end-to-end model is half of its pass",
                                      .defaults = {{"batch", "1"}, {"image", "32"}},
                                      .build = [](const pipeline::Args& a, DType d) { return pipeline::build("resnet18", a.values(), d); },
                                      .published_params = 11'689'512,
                                      .source = "tests/pipeline_config_test.cpp",
                                      .end_to_end_scale = 2});

TEST(PipelineConfig, TheEndToEndScaleIsDeclaredByTheModel) {
  Case like;
  like.threads = 1;
  auto planned = pipeline::plan_pipeline(pipeline::build("test_half_model", {}, DType::fp32), like, {}, true);
  ASSERT_TRUE(planned.end_to_end);
  EXPECT_EQ(planned.end_to_end->op, "model");
  EXPECT_EQ(planned.end_to_end->get("name"), "test_half_model");
  EXPECT_EQ(planned.end_to_end->get("image"), "32");
  EXPECT_DOUBLE_EQ(planned.end_to_end_scale, 2);
  // The model op's cost is the part of the pass it runs.
  const ModelCost cost = Registry::global().op("model")->model_cost(*planned.end_to_end);
  EXPECT_DOUBLE_EQ(cost.macs, planned.pipeline.total_macs() / 2);
  EXPECT_DOUBLE_EQ(cost.params, planned.pipeline.total_params() / 2);
  EXPECT_DOUBLE_EQ(pipeline::Registry::global().find("opt_66b_decode")->end_to_end_scale, 64);
  EXPECT_DOUBLE_EQ(pipeline::Registry::global().find("resnet18")->end_to_end_scale, 1);
  // Without the end-to-end comparison: no model case.
  EXPECT_FALSE(pipeline::plan_pipeline(pipeline::build("test_half_model", {}, DType::fp32), like, {}, false).end_to_end);
}

// Issue 27 item 12: names and labels name files, table rows and log lines: one line of printable
// text, not empty, and a pipeline's name its own.
TEST(PipelineConfig, NamesAndLabelsAreUniqueNonEmptyPrintableText) {
  const std::string layer = "    layers:\n      - {label: a, op: add}\n";
  auto twice = error_of("pipelines:\n  - name: x\n" + layer + "  - name: x\n" + layer);
  EXPECT_TRUE(has(twice, "p.yaml:5:")) << twice;
  EXPECT_TRUE(has(twice, "pipeline name 'x' is used twice")) << twice;
  auto builtin_twice = error_of("pipelines:\n  - {name: resnet18, batch: 2}\n  - {name: resnet18, batch: 2}\n");
  EXPECT_TRUE(has(builtin_twice, "pipeline 'resnet18' is listed twice with the same parameters")) << builtin_twice;
  EXPECT_EQ(error_of("pipelines:\n  - {name: resnet18, batch: 1}\n  - {name: resnet18, batch: 2}\n"), "no error");
  auto empty_name = error_of("pipelines:\n  - name: ''\n" + layer);
  EXPECT_TRUE(has(empty_name, "pipeline name is empty")) << empty_name;
  auto empty_label = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: '', op: add}\n");
  EXPECT_TRUE(has(empty_label, "label is empty")) << empty_label;
  auto newline = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: \"a\\nb\", op: add}\n");
  EXPECT_TRUE(has(newline, "label 'a\\x0ab' holds a control or invisible character (\\x0a)")) << newline;
  auto nul = error_of("pipelines:\n  - name: \"x\\0y\"\n" + layer);
  EXPECT_TRUE(has(nul, "holds a control or invisible character (\\x00)")) << nul;
  // Characters that reorder or hide text would disguise a name in a terminal or a report.
  auto bidi = error_of("pipelines:\n  - name: \"ab\\u202Ec\"\n" + layer);
  EXPECT_TRUE(has(bidi, "holds a control or invisible character (U+202E)")) << bidi;
  auto zero_width = error_of("pipelines:\n  - name: \"a\\u200Bb\"\n" + layer);
  EXPECT_TRUE(has(zero_width, "(U+200B)")) << zero_width;
  // C1 controls (NEL), line separators; the name in the message shows each by its code.
  auto nel = error_of("pipelines:\n  - name: \"a\\u0085b\"\n" + layer);
  EXPECT_TRUE(has(nel, "name 'aU+0085b' holds a control or invisible character (U+0085)")) << nel;
  EXPECT_TRUE(has(error_of("pipelines:\n  - name: \"a\\u2028b\"\n" + layer), "(U+2028)"));
  EXPECT_EQ(error_of("pipelines:\n  - name: \"caf\\u00e9 \\u2014 net\"\n" + layer), "no error");  // printable text
  auto key_twice = error_of("pipelines:\n  - {name: resnet18, batch: 1, batch: 2}\n");
  EXPECT_TRUE(has(key_twice, "key 'batch' given twice in one mapping")) << key_twice;
  auto leading = error_of("pipelines:\n  - {name: resnet18, batch: '01'}\n");
  EXPECT_TRUE(has(leading, "batch=01: write the integer as batch=1")) << leading;
  auto layer_leading = error_of("pipelines:\n  - name: x\n    layers:\n      - {label: a, op: add, hidden: '064'}\n");
  EXPECT_TRUE(has(layer_leading, "layer 'a': hidden=064: write the integer as hidden=64")) << layer_leading;
}

// --- end to end through the CLI ------------------------------------------------------------------
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"


TEST(PipelineCli, RunWritesEachPipelinesTotalsAndSaysWhichIsIncomplete) {
  auto dir = temp_dir("pipelines");
  auto config = write(dir, "p.yaml", R"(
pipelines:
  - name: small
    samples: 2
    layers:
      - {label: res, op: add, batch: 2, seq: 3, hidden: 40, count: 2}
      - {label: act, op: relu, batch: 2, seq: 3, hidden: 40}
  - name: broken
    layers:
      - {label: res, op: add, batch: 2, seq: 3, hidden: 40}
      - {label: wrong, op: test_cpu_only, n: 8}
impls: [test_cpu]
end_to_end: false
)");
  auto out = cli("run " + config.string() + " --samples 3 --warmup 1 --no-report --out " + (dir / "r").string());
  EXPECT_EQ(out.code, 1) << out.text;  // the test op's layer errs
  EXPECT_NE(out.text.find("pipeline small"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("pipeline broken"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("INCOMPLETE, no totals: 1 layer(s) not measured; first: wrong (test_cpu_only): error"),
            std::string::npos)
      << out.text;
  auto j = nlohmann::json::parse(slurp(dir / "r" / "pipelines.json"));
  ASSERT_EQ(j["pipelines"].size(), 2u);
  const auto& small = j["pipelines"][0];
  EXPECT_EQ(small["name"], "small");
  EXPECT_TRUE(small["complete"].get<bool>());
  // One pass = 2 x add + relu, from the two results of the run.
  auto results = nlohmann::json::parse(slurp(dir / "r" / "results.json"));
  double add_s = 0, relu_s = 0;
  for (const auto& b : results["benchmarks"]) {
    if (b.value("run_type", "iteration") != "iteration") continue;  // not the aggregates
    std::string name = b["name"], unit = b["time_unit"];
    const double seconds = b["real_time"].get<double>() * (unit == "ns" ? 1e-9 : unit == "us" ? 1e-6 : unit == "ms" ? 1e-3 : 1);
    if (name.starts_with("add/")) add_s = seconds;
    if (name.starts_with("relu/")) relu_s = seconds;
  }
  ASSERT_GT(add_s, 0);
  ASSERT_GT(relu_s, 0);
  EXPECT_NEAR(small["latency_s"].get<double>(), 2 * add_s + relu_s, 1e-3 * (2 * add_s + relu_s));
  EXPECT_FALSE(j["pipelines"][1]["complete"].get<bool>());
  EXPECT_FALSE(j["pipelines"][1].contains("latency_s") && !j["pipelines"][1]["latency_s"].is_null());
  auto csv = slurp(dir / "r" / "summary.csv");
  EXPECT_NE(csv.find("\nsmall,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nbroken,"), std::string::npos) << csv;
  EXPECT_TRUE(fs::exists(dir / "r" / "pipeline-small.log"));
  EXPECT_TRUE(fs::exists(dir / "r" / "pipeline_layers.csv"));
  // The files listed are those written (issue 27 item 13): no quantization.csv without recipes,
  // and the pipelines' own.
  EXPECT_FALSE(fs::exists(dir / "r" / "quantization.csv"));
  EXPECT_EQ(out.text.find("quantization.csv"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("pipeline results in " + (dir / "r").string() +
                          "/ (pipelines.json, summary.csv, pipeline_layers.csv, pipeline-small.log, pipeline-broken.log)"),
            std::string::npos)
      << out.text;
}

// The run's report is written once, at the end, with its Pipelines section (no report without
// it rewritten after the pipeline files), and listed with them.
TEST(PipelineCli, AHotRunsPipelinesAreCompleteAndInItsReport) {
  auto dir = temp_dir("pipelines_report");
  auto config = write(dir, "p.yaml", R"(
pipelines:
  - name: small
    layers:
      - {label: res, op: add, batch: 1, seq: 2, hidden: 16}
end_to_end: false
)");
  // --hot (like --threads and --graph) applies to the pipelines' layers too: they were planned
  // cold, measured hot, and the pipeline came out incomplete.
  auto out = cli("run " + config.string() + " --hot --samples 3 --warmup 1 --out " + (dir / "r").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("INCOMPLETE"), std::string::npos) << out.text;
  auto j = nlohmann::json::parse(slurp(dir / "r" / "pipelines.json"));
  EXPECT_TRUE(j["pipelines"][0]["complete"].get<bool>());
  EXPECT_NE(j["pipelines"][0]["layers"][0]["case"].get<std::string>().find(",hot"), std::string::npos);
  EXPECT_NE(slurp(dir / "r" / "report.html").find("<h2>Pipelines</h2>"), std::string::npos);
  EXPECT_NE(slurp(dir / "r" / "report.md").find("## Pipelines"), std::string::npos);
  EXPECT_NE(out.text.find("pipeline-small.log, report.html, report.md)"), std::string::npos) << out.text;
}

// Issue 27 item 13: a reason that applies to every impl of the backend (no driver, no device)
// ends the fallback rounds at once, said once, instead of a round per impl.
TEST(PipelineCli, ABackendLevelSkipReasonStopsTheFallbackRounds) {
  auto dir = temp_dir("pipelines_no_gpu");
  auto config = write(dir, "p.yaml", R"(
pipelines:
  - name: two
    layers:
      - {label: fc, op: gemm, M: 8, N: 8, K: 8}
      - {label: res, op: add, batch: 1, seq: 4, hidden: 8}
device: cuda:0
end_to_end: false
)");
  auto out = cli("run " + config.string() + " --samples 3 --warmup 1 --no-report --out " + (dir / "r").string());
  if (out.text.find("INCOMPLETE, no totals") == std::string::npos)
    GTEST_SKIP() << "no CUDA backend here, or a usable GPU: this test needs the backend built and no GPU\n" << out.text;
  EXPECT_EQ(out.code, 0) << out.text;  // skipped is not a failure
  EXPECT_NE(out.text.find("every layer was skipped for one reason, which applies to every impl here: "), std::string::npos)
      << out.text;
  // At most the one round that shows the next impl fares no better (gemm: cuda, then cublaslt).
  const auto first = out.text.find("trying the next impl");
  EXPECT_TRUE(first == std::string::npos || out.text.find("trying the next impl", first + 1) == std::string::npos)
      << out.text;
}

// --graph N on a run with no CUDA case was dropped in silence while the config's graph: N exits 2
// (the probe's F10): the flag is refused too, named; 0 (off) stays accepted.
TEST(PipelineCli, GraphOnACpuOnlyRunExitsTwoAsTheConfigKeyDoes) {
  auto flag = cli("run --pipeline resnet18:image=32 --graph 5 --dry-run");
  EXPECT_EQ(flag.code, 2) << flag.text;
  EXPECT_NE(flag.text.find("error: --graph 5: graph=N (CUDA Graph mode) needs a CUDA device, and no case of this "
                           "run is on one (--device cuda:N)"),
            std::string::npos)
      << flag.text;
  auto dir = temp_dir("pipelines_graph_key");
  auto key = cli("run --dry-run " + write(dir, "g.yaml", "pipelines: [resnet18]\ngraph: 5\n").string());
  EXPECT_EQ(key.code, 2) << key.text;
  EXPECT_NE(key.text.find("graph=N (CUDA Graph mode) needs a CUDA device"), std::string::npos) << key.text;
  EXPECT_EQ(cli("run --pipeline resnet18:image=32 --graph 0 --dry-run").code, 0);
  auto cuda = cli("run --pipeline resnet18:image=32 --device cuda:0 --graph 5 --dry-run");
  EXPECT_EQ(cuda.code, 0) << cuda.text;
  EXPECT_NE(cuda.text.find(",graph=5"), std::string::npos) << cuda.text;
}

// A dry run says how many of its cases are the ceilings added for % of peak: "30 cases from
// --pipeline" counted 3 that are no layer.
TEST(PipelineCli, ADryRunCountsItsCeilingCasesApart) {
  auto dry = cli("run --pipeline resnet18:image=32 --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.text;
  std::istringstream lines(dry.text.substr(dry.text.find(" from --pipeline")));
  std::string line;
  std::getline(lines, line);
  std::size_t all = 0, ceilings = 0;
  for (; std::getline(lines, line); ++all)
    if (line.starts_with("peak/") || line.starts_with("bandwidth/")) ++ceilings;
  ASSERT_GT(ceilings, 0u) << dry.text;
  EXPECT_NE(
      dry.text.find(fmt::format("\n{} cases from --pipeline, {} of them ceiling cases for % of peak\n", all, ceilings)),
      std::string::npos)
      << dry.text;
}

TEST(PipelineCli, BadPipelineFlagsExitWithTwo) {
  auto unknown = cli("run --pipeline resnet_18 --dry-run");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.text.find("unknown pipeline 'resnet_18'; did you mean 'resnet18'?"), std::string::npos) << unknown.text;
  auto bad_param = cli("run --pipeline resnet18:batchsize=4 --dry-run");
  EXPECT_EQ(bad_param.code, 2);
  EXPECT_NE(bad_param.text.find("unknown parameter 'batchsize'"), std::string::npos) << bad_param.text;
  auto malformed = cli("run --pipeline resnet18:batch --dry-run");
  EXPECT_EQ(malformed.code, 2);
  EXPECT_NE(malformed.text.find("'batch' is not key=value"), std::string::npos) << malformed.text;
  // Errors quote the flag as the user wrote it, not the YAML it stands for (issue 27 item 13).
  auto zero = cli("run --pipeline resnet18 --pipeline resnet50:batch=0 --dry-run");
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.text.find("--pipeline 'resnet50:batch=0': "), std::string::npos) << zero.text;
  EXPECT_EQ(zero.text.find("--pipeline:"), std::string::npos) << zero.text;
  auto twice = cli("run --pipeline resnet18:batch=1,batch=2 --dry-run");
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.text.find("--pipeline 'resnet18:batch=1,batch=2': 'batch' is given twice"), std::string::npos) << twice.text;
  auto leading = cli("run --pipeline resnet18:batch=01 --dry-run");
  EXPECT_EQ(leading.code, 2);
  EXPECT_NE(leading.text.find("batch=01: write the integer as batch=1"), std::string::npos) << leading.text;
  auto bad_dtype = cli("run --pipeline resnet18 --pipeline resnet50:dtype=fp7 --dry-run");
  EXPECT_EQ(bad_dtype.code, 2);
  EXPECT_NE(bad_dtype.text.find("opmeter: error: --pipeline 'resnet50:dtype=fp7': unknown dtype 'fp7'"), std::string::npos)
      << bad_dtype.text;
  auto with_suite = cli("run --pipeline resnet18 --suite quick --dry-run");
  EXPECT_EQ(with_suite.code, 2);
  auto dry = cli("run --pipeline resnet18:batch=2 --dry-run");
  EXPECT_EQ(dry.code, 0) << dry.text;
  EXPECT_NE(dry.text.find("conv2d/onednn/fp32/batch=2,channels=3,out_channels=64,image=224,kernel=7"), std::string::npos)
      << dry.text;
  EXPECT_NE(dry.text.find("model/torch/fp32/name=resnet18,batch=2,image=224"), std::string::npos) << dry.text;
  // A dry run shows the pipeline's layers with counts, params and MACs (issue 27 item 13).
  EXPECT_NE(dry.text.find("pipeline resnet18 (batch=2, image=224, fp32 on cpu): "), std::string::npos) << dry.text;
  EXPECT_NE(dry.text.find("11.69 M params"), std::string::npos) << dry.text;
  EXPECT_NE(dry.text.find("layer"), std::string::npos) << dry.text;
  EXPECT_NE(dry.text.find("MACs  case"), std::string::npos) << dry.text;
}
