// The built-in pipelines: generated params and MACs against the published figures, scaling with
// batch and image, bad parameters, unique labels, and `opmeter list`.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "opmeter/errors.hpp"
#include "opmeter/pipeline.hpp"
#include "pipeline/builders.hpp"
#include "tests/cli_helpers.hpp"

namespace opmeter::pipeline {
namespace {

const std::vector<std::string> kPipelines = {"resnet18",     "resnet50", "mobilenet_v3_small", "efficientnet_b0",
                                             "replknet_31b", "vit_b_16", "opt_66b_prefill",    "opt_66b_decode"};
const std::vector<std::string> kVision = {"resnet18",        "resnet50",     "mobilenet_v3_small",
                                          "efficientnet_b0", "replknet_31b", "vit_b_16"};

Pipeline built(const std::string& name, std::vector<std::pair<std::string, std::string>> given = {}) {
  return build(name, given, DType::fp32);
}

double macs_per_sample(const Pipeline& p) { return p.total_macs() / p.samples; }

TEST(PipelineBuiltin, EveryPipelineIsRegisteredWithItsSource) {
  std::vector<std::string> names;
  for (const auto* def : Registry::global().all()) {
    names.push_back(def->name);
    EXPECT_FALSE(def->summary.empty()) << def->name;
    EXPECT_FALSE(def->source.empty()) << def->name;
    EXPECT_GT(def->published_params, 0) << def->name;
  }
  for (const auto& name : kPipelines) EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

// torchvision's parameter counts, exactly (BatchNorm's scale and shift counted, running stats not).
TEST(PipelineBuiltin, ParamsEqualTorchvisionExactly) {
  EXPECT_EQ(built("resnet18").total_params(), 11'689'512);
  EXPECT_EQ(built("resnet50").total_params(), 25'557'032);
  EXPECT_EQ(built("mobilenet_v3_small").total_params(), 2'542'856);
  EXPECT_EQ(built("efficientnet_b0").total_params(), 5'288'548);
  EXPECT_EQ(built("vit_b_16").total_params(), 86'567'656);
  for (const auto& name : {"resnet18", "resnet50", "mobilenet_v3_small", "efficientnet_b0", "vit_b_16"})
    EXPECT_EQ(built(name).total_params(), Registry::global().find(name)->published_params) << name;
}

// Published MACs are rounded (torchvision: two decimals of GFLOPS); the generated count is within
// that rounding, RepLKNet's within 2% of the paper's.
TEST(PipelineBuiltin, MacsMatchThePublishedFiguresWithinTheirRounding) {
  struct Target {
    const char* name;
    double macs, tolerance;
  };
  for (const auto& t : {Target{"resnet18", 1.81e9, 0.005e9}, Target{"resnet50", 4.09e9, 0.005e9},
                        Target{"mobilenet_v3_small", 0.06e9, 0.005e9}, Target{"efficientnet_b0", 0.39e9, 0.005e9},
                        Target{"vit_b_16", 17.56e9, 0.005e9}, Target{"replknet_31b", 15.3e9, 0.02 * 15.3e9}}) {
    auto p = built(t.name);
    EXPECT_NEAR(macs_per_sample(p), t.macs, t.tolerance) << t.name;
    EXPECT_EQ(Registry::global().find(t.name)->published_macs, t.macs) << t.name;
  }
  // The paper's MobileNetV3-Small figure is 56 M.
  EXPECT_NEAR(macs_per_sample(built("mobilenet_v3_small")), 56e6, 1e6);
}

TEST(PipelineBuiltin, ReplknetIsWithinTwoPercentOfThePaper) {
  auto p = built("replknet_31b");
  EXPECT_NEAR(p.total_params(), 79e6, 0.02 * 79e6);
  // 31x31, 29x29, 27x27 and 13x13 depthwise kernels, one per RepLK block (2 + 2 + 18 + 2).
  std::map<std::string, int> large;
  for (const auto& l : p.layers) {
    if (!l.label.ends_with(".large_kernel")) continue;
    EXPECT_EQ(l.kase.get("groups"), l.kase.get("channels")) << l.label;
    ++large[l.kase.get("kernel")];
  }
  EXPECT_EQ(large, (std::map<std::string, int>{{"13", 2}, {"27", 18}, {"29", 2}, {"31", 2}}));
}

constexpr double kOptHidden = 9216, kOptLayerParams = 12 * kOptHidden * kOptHidden + 13 * kOptHidden;

TEST(PipelineBuiltin, OptIsSixtyFourDecoderLayers) {
  for (const auto& name : {"opt_66b_prefill", "opt_66b_decode"}) {
    auto p = built(name);
    EXPECT_EQ(p.total_params(), 64 * kOptLayerParams) << name;
    EXPECT_NEAR(p.total_params(), 65.2e9, 0.01 * 65.2e9) << name;
    EXPECT_EQ(p.sample_unit, "token");
    for (const auto& l : p.layers) EXPECT_EQ(l.count, 64u) << l.label;
  }
  // Per token: the linears' 12 h^2 and the attention's 2 x heads x context x head_dim per layer.
  auto prefill = built("opt_66b_prefill", {{"batch", "2"}, {"seq", "512"}});
  EXPECT_EQ(prefill.samples, 2 * 512);
  EXPECT_DOUBLE_EQ(macs_per_sample(prefill), 64 * (12 * kOptHidden * kOptHidden + 2 * 72 * 512 * 128.0));
  auto decode = built("opt_66b_decode", {{"batch", "4"}, {"kv", "1000"}});
  EXPECT_EQ(decode.samples, 4);
  EXPECT_DOUBLE_EQ(macs_per_sample(decode), 64 * (12 * kOptHidden * kOptHidden + 2 * 72 * 1000 * 128.0));
  for (const auto& l : decode.layers)
    if (l.kase.op == "linear") {
      EXPECT_EQ(l.kase.get("seq"), "1") << l.label;
    }
}

TEST(PipelineBuiltin, MacsScaleWithBatchAndParamsDoNot) {
  for (const auto& name : kPipelines) {
    auto one = built(name, {{"batch", "1"}});
    auto eight = built(name, {{"batch", "8"}});
    EXPECT_EQ(eight.total_params(), one.total_params()) << name;
    EXPECT_DOUBLE_EQ(eight.total_macs(), 8 * one.total_macs()) << name;
    EXPECT_EQ(eight.samples, 8 * one.samples) << name;
    for (const auto& l : eight.layers) EXPECT_EQ(l.kase.get("batch"), "8") << name << " " << l.label;
  }
}

TEST(PipelineBuiltin, ASmallerImageHasFewerMacs) {
  for (const auto& name : kVision) {
    auto full = built(name);
    auto small = built(name, {{"image", "160"}});
    EXPECT_LT(small.total_macs(), 0.6 * full.total_macs()) << name;  // (160/224)^2 = 0.51
    EXPECT_GT(small.total_macs(), 0.4 * full.total_macs()) << name;
    EXPECT_EQ(small.params, (std::vector<std::pair<std::string, std::string>>{{"batch", "1"}, {"image", "160"}}));
    // Only ViT's position table depends on the image (1 + 10 x 10 tokens at 160).
    if (name == "vit_b_16") {
      EXPECT_EQ(full.total_params() - small.total_params(), (197 - 101) * 768.0);
    } else {
      EXPECT_EQ(small.total_params(), full.total_params()) << name;
    }
  }
}

TEST(PipelineBuiltin, LabelsAreUniqueAndFollowTheModules) {
  for (const auto& name : kPipelines) {
    std::set<std::string> seen;
    for (const auto& l : built(name).layers) EXPECT_TRUE(seen.insert(l.label).second) << name << ": " << l.label;
  }
  auto labels = [](const std::string& name) {
    std::set<std::string> s;
    for (const auto& l : built(name).layers) s.insert(l.label);
    return s;
  };
  for (const auto& [name, label] : std::vector<std::pair<std::string, std::string>>{
           {"resnet18", "layer3.0.downsample.0"},
           {"resnet18", "layer4.1.conv2"},
           {"resnet50", "layer3.5.conv3"},
           {"mobilenet_v3_small", "features.4.block.2"},
           {"mobilenet_v3_small", "classifier.3"},
           {"efficientnet_b0", "features.6.3.block.3"},
           {"vit_b_16", "encoder.layers.encoder_layer_11.mlp.3"},
           {"replknet_31b", "stages.2.blocks.35.pw2"},
           {"opt_66b_prefill", "decoder.fc1"},
       })
    EXPECT_TRUE(labels(name).contains(label)) << name << " lacks " << label;
}

// Spot checks of the generated shapes against the architectures.
TEST(PipelineBuiltin, LayersHaveTheArchitecturesShapes) {
  auto find = [](const Pipeline& p, const std::string& label) -> const Case& {
    for (const auto& l : p.layers)
      if (l.label == label) return l.kase;
    throw std::runtime_error("no layer " + label);
  };
  auto r50 = built("resnet50");
  const Case& c = find(r50, "layer2.0.conv2");  // v1.5: the 3x3 strides
  EXPECT_EQ(c.get("stride"), "2");
  EXPECT_EQ(c.get("image"), "56");
  EXPECT_EQ(find(r50, "layer2.0.conv1").get("stride"), "1");
  EXPECT_EQ(find(r50, "layer4.2.add").get("hidden"), "49");  // 7 x 7
  auto mb = built("mobilenet_v3_small");
  EXPECT_EQ(find(mb, "features.5.block.2").get("reduced"), "64");  // make_divisible(240 / 4, 8)
  EXPECT_EQ(find(mb, "features.5.block.2").get("gate"), "hardsigmoid");
  EXPECT_EQ(find(mb, "features.1.block.1").get("reduced"), "8");
  auto eff = built("efficientnet_b0");
  EXPECT_EQ(find(eff, "features.6.1.block.2").get("reduced"), "48");  // 192 / 4
  EXPECT_EQ(find(eff, "features.6.1.block.1").get("kernel"), "5");
  auto vit = built("vit_b_16", {{"batch", "2"}});
  EXPECT_EQ(find(vit, "encoder.layers.encoder_layer_0.self_attention.sdpa").get("seq"), "197");
  EXPECT_EQ(find(vit, "heads.head").get("seq"), "1");
  EXPECT_EQ(find(built("opt_66b_prefill"), "decoder.self_attn.sdpa").get("causal"), "1");
  EXPECT_EQ(find(built("opt_66b_decode"), "decoder.self_attn.sdpa").op, "decode_attention");
}

TEST(PipelineBuiltin, BadNamesAndParametersAreCaseErrors) {
  auto message = [](const std::string& name, std::vector<std::pair<std::string, std::string>> given) {
    try {
      build(name, given, DType::fp32);
    } catch (const CaseError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("resnet19", {}).find("resnet18"), std::string::npos) << message("resnet19", {});
  EXPECT_NE(message("resnet18", {{"seq", "8"}}).find("parameter 'seq'"), std::string::npos)
      << message("resnet18", {{"seq", "8"}});
  EXPECT_NE(message("resnet18", {{"batch", "0"}}).find("positive integer"), std::string::npos);
  EXPECT_NE(message("opt_66b_decode", {{"kv", "x"}}).find("kv='x'"), std::string::npos);
  EXPECT_NE(message("vit_b_16", {{"image", "100"}}).find("multiple of the patch size 16"), std::string::npos);
  // A value a layer cannot take: that layer says so.
  const auto huge = message("resnet18", {{"image", "100000"}});
  EXPECT_NE(huge.find("layer 'conv1'"), std::string::npos) << huge;
}

TEST(PipelineBuiltin, MakeDivisibleRoundsAsTorchvision) {
  EXPECT_EQ(make_divisible(4), 8);
  EXPECT_EQ(make_divisible(60), 64);
  EXPECT_EQ(make_divisible(30), 32);
  EXPECT_EQ(make_divisible(36), 40);
  EXPECT_EQ(make_divisible(144), 144);
  EXPECT_EQ(make_divisible(11), 16);  // 8 would be more than 10% below 11
}

TEST(PipelineBuiltin, ListShowsThePipelinesWithTheirParameters) {
  auto list = cli("list");
  ASSERT_EQ(list.code, 0) << list.text;
  auto at = list.text.find("pipelines");
  ASSERT_NE(at, std::string::npos) << list.text;
  for (const auto& name : kPipelines) EXPECT_NE(list.text.find("  " + name + " ", at), std::string::npos) << name;
  EXPECT_NE(list.text.find("params: batch=1, image=224", at), std::string::npos) << list.text.substr(at);
  EXPECT_NE(list.text.find("params: batch=1, seq=2048", at), std::string::npos) << list.text.substr(at);
  EXPECT_NE(list.text.find("params: batch=1, kv=2048", at), std::string::npos) << list.text.substr(at);
}

}  // namespace
}  // namespace opmeter::pipeline
