// MobileNetV3-Small (Howard et al. 2019) in torchvision's layout, generated from its bneck table:
// inverted residuals (1x1 expansion unless the width stays, depthwise kxk, optional
// squeeze-excite with a hard-sigmoid gate, 1x1 projection), ReLU or hard-swish per block.
#include <array>

#include "pipeline/builders.hpp"

namespace opmeter::pipeline {
namespace {

struct Bneck {
  std::int64_t in, kernel, expanded, out;
  bool se;
  const char* act;  // "relu" (RE) or "hardswish" (HS)
  std::int64_t stride;
};

// torchvision's _mobilenet_v3_conf("mobilenet_v3_small"), width multiplier 1.
constexpr std::array<Bneck, 11> kBnecks = {{
    {16, 3, 16, 16, true, "relu", 2},
    {16, 3, 72, 24, false, "relu", 2},
    {24, 3, 88, 24, false, "relu", 1},
    {24, 5, 96, 40, true, "hardswish", 2},
    {40, 5, 240, 40, true, "hardswish", 1},
    {40, 5, 240, 40, true, "hardswish", 1},
    {40, 5, 120, 48, true, "hardswish", 1},
    {48, 5, 144, 48, true, "hardswish", 1},
    {48, 5, 288, 96, true, "hardswish", 2},
    {96, 5, 576, 96, true, "hardswish", 1},
    {96, 5, 576, 96, true, "hardswish", 1},
}};
constexpr std::int64_t kStem = 16, kLastConv = 6 * 96, kHidden = 1024, kClasses = 1000;

// features.<i>: block.<j> numbers the expansion, depthwise, SE and projection modules present.
Feature inverted_residual(Net& net, const std::string& name, Feature in, const Bneck& b) {
  int j = 0;
  auto next = [&] { return name + ".block." + std::to_string(j++); };
  Feature x = in;
  if (b.expanded != b.in) x = conv_bn_act(net, next(), x, b.expanded, 1, 1, b.act);
  x = dw_conv_bn_act(net, next(), x, b.kernel, b.stride, b.act);
  if (b.se) squeeze_excite(net, next(), x, make_divisible(double(b.expanded / 4)), "relu", "hardsigmoid");
  x = conv_bn_act(net, next(), x, b.out, 1, 1, "none");
  if (b.stride == 1 && b.in == b.out) residual_add(net, name + ".add", x);
  return x;
}

Pipeline build(const Args& args, DType dtype) {
  Net net(dtype, args.integer("batch"));
  Feature x = conv_bn_act(net, "features.0", {3, args.integer("image")}, kStem, 3, 2, "hardswish");
  int i = 1;
  for (const Bneck& b : kBnecks) x = inverted_residual(net, "features." + std::to_string(i++), x, b);
  x = conv_bn_act(net, "features." + std::to_string(i), x, kLastConv, 1, 1, "hardswish");
  x = global_avg_pool(net, "avgpool", x);
  linear(net, "classifier.0", 1, x.channels, kHidden, "hardswish");
  linear(net, "classifier.3", 1, kHidden, kClasses);
  Pipeline p = net.finish(double(net.batch()), "img");
  classifier_tensors(p, net.batch(), args.integer("image"), kClasses);
  return p;
}

const Registrar reg({.name = "mobilenet_v3_small",
                     .summary = "MobileNetV3-Small (Howard et al. 2019), torchvision layout, BN folded into the convs",
                     .defaults = {{"batch", "1"}, {"image", "224"}},
                     .build = build,
                     .published_params = 2'542'856,
                     .published_macs = 0.06e9,
                     .source = "torchvision model docs (MobileNet_V3_Small_Weights.IMAGENET1K_V1: params, GFLOPS); "
                               "56 M MACs in the paper"});

}  // namespace
}  // namespace opmeter::pipeline
