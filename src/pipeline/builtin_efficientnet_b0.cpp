// EfficientNet-B0 (Tan & Le 2019) in torchvision's layout, generated from its stage table: MBConv
// blocks (1x1 expansion when the ratio is above 1, depthwise kxk, squeeze-excite to in/4 channels
// with SiLU and a sigmoid gate, 1x1 projection), SiLU throughout, residual where shapes allow.
#include <algorithm>
#include <array>

#include "pipeline/builders.hpp"

namespace opmeter::pipeline {
namespace {

struct Stage {
  std::int64_t expand, kernel, stride, in, out, layers;
};

// torchvision's _efficientnet_conf("efficientnet_b0"): width and depth multipliers 1.
constexpr std::array<Stage, 7> kStages = {{
    {1, 3, 1, 32, 16, 1},
    {6, 3, 2, 16, 24, 2},
    {6, 5, 2, 24, 40, 2},
    {6, 3, 2, 40, 80, 3},
    {6, 5, 1, 80, 112, 3},
    {6, 5, 2, 112, 192, 4},
    {6, 3, 1, 192, 320, 1},
}};
constexpr std::int64_t kStem = 32, kHeadConv = 4 * 320, kClasses = 1000;

Feature mbconv(Net& net, const std::string& name, Feature in, std::int64_t out, std::int64_t expand,
               std::int64_t kernel, std::int64_t stride) {
  int j = 0;
  auto next = [&] { return name + ".block." + std::to_string(j++); };
  const std::int64_t expanded = make_divisible(double(in.channels * expand));
  Feature x = in;
  if (expanded != in.channels) x = conv_bn_act(net, next(), x, expanded, 1, 1, "silu");
  x = dw_conv_bn_act(net, next(), x, kernel, stride, "silu");
  squeeze_excite(net, next(), x, std::max<std::int64_t>(1, in.channels / 4), "silu", "sigmoid");
  x = conv_bn_act(net, next(), x, out, 1, 1, "none");
  if (stride == 1 && in.channels == out) residual_add(net, name + ".add", x);
  return x;
}

Pipeline build(const Args& args, DType dtype) {
  Net net(dtype, args.integer("batch"));
  Feature x = conv_bn_act(net, "features.0", {3, args.integer("image")}, kStem, 3, 2, "silu");
  for (std::size_t s = 0; s < kStages.size(); ++s) {
    const Stage& st = kStages[s];
    for (std::int64_t i = 0; i < st.layers; ++i)  // the stage's first block strides and widens
      x = mbconv(net, "features." + std::to_string(s + 1) + "." + std::to_string(i), x, st.out, st.expand, st.kernel,
                 i == 0 ? st.stride : 1);
  }
  x = conv_bn_act(net, "features." + std::to_string(kStages.size() + 1), x, kHeadConv, 1, 1, "silu");
  x = global_avg_pool(net, "avgpool", x);
  linear(net, "classifier.1", 1, x.channels, kClasses);
  Pipeline p = net.finish(double(net.batch()), "img");
  classifier_tensors(p, net.batch(), args.integer("image"), kClasses);
  return p;
}

const Registrar reg({.name = "efficientnet_b0",
                     .summary = "EfficientNet-B0 (Tan & Le 2019), torchvision layout, BN folded into the convs",
                     .defaults = {{"batch", "1"}, {"image", "224"}},
                     .build = build,
                     .published_params = 5'288'548,
                     .published_macs = 0.39e9,
                     .source = "torchvision model docs (EfficientNet_B0_Weights.IMAGENET1K_V1: params, GFLOPS)"});

}  // namespace
}  // namespace opmeter::pipeline
