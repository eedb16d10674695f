// Pipelines in configs: users' layers, errors at the node, impl choice per layer, the fallback
// rounds and the --pipeline flag.
#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "opmeter/config.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/pipeline_plan.hpp"

using namespace opmeter;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    load_config_text(yaml, "p.yaml", 2);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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
}

TEST(PipelineConfig, PipelineFlagsBecomeAConfig) {
  EXPECT_EQ(pipeline_flags_config({"resnet50:batch=64,image=160"}), "pipelines:\n  - {name: resnet50, batch: 64, image: 160}\n");
  EXPECT_EQ(pipeline_flags_config({"vit_b_16:dtype=bf16", "resnet18"}),
            "dtypes: [bf16]\npipelines:\n  - {name: vit_b_16}\n  - {name: resnet18}\n");
  for (const char* bad : {"", ":batch=2", "resnet50:batch", "resnet50:batch=", "resnet50:=3", "resnet50:a=1,,b=2",
                          "res net", "resnet50:batch={2}"}) {
    try {
      pipeline_flags_config({bad});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_TRUE(has(e.what(), "--pipeline")) << e.what();
    }
  }
}
