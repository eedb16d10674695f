// ResNet-18 and ResNet-50 (He et al. 2015) in torchvision's layout, generated from the stage table:
// four stages of basic blocks (two 3x3 convs) or bottlenecks (1x1, 3x3, 1x1 x4; torchvision v1.5
// strides on the 3x3), a 1x1 projection where a block changes the stride or the width.
#include <array>

#include "pipeline/builders.hpp"

namespace opmeter::pipeline {
namespace {

struct ResNetDef {
  bool bottleneck;
  std::array<int, 4> blocks;  // per stage
};

constexpr std::array<std::int64_t, 4> kWidths = {64, 128, 256, 512};
constexpr std::int64_t kClasses = 1000;

// One residual block: inference form, BN folded into each conv, ReLU after the add.
Feature block(Net& net, const std::string& name, Feature in, std::int64_t width, std::int64_t stride, bool bottleneck) {
  Feature out;
  if (bottleneck) {
    Feature a = conv_bn_act(net, name + ".conv1", in, width, 1, 1, "relu");
    Feature b = conv_bn_act(net, name + ".conv2", a, width, 3, stride, "relu");
    out = conv_bn_act(net, name + ".conv3", b, 4 * width, 1, 1, "none");
  } else {
    Feature a = conv_bn_act(net, name + ".conv1", in, width, 3, stride, "relu");
    out = conv_bn_act(net, name + ".conv2", a, width, 3, 1, "none");
  }
  if (stride != 1 || in.channels != out.channels)
    conv_bn_act(net, name + ".downsample.0", in, out.channels, 1, stride, "none");
  residual_add(net, name + ".add", out);
  activation(net, name + ".relu", "relu", out);
  return out;
}

Pipeline build_resnet(const ResNetDef& def, const Args& args, DType dtype) {
  Net net(dtype, args.integer("batch"));
  Feature x{3, args.integer("image")};
  x = conv_bn_act(net, "conv1", x, 64, 7, 2, "relu");
  x = max_pool(net, "maxpool", x, 3, 2, 1);
  for (std::size_t stage = 0; stage < kWidths.size(); ++stage)
    for (int i = 0; i < def.blocks[stage]; ++i) {
      std::int64_t stride = stage > 0 && i == 0 ? 2 : 1;
      x = block(net, "layer" + std::to_string(stage + 1) + "." + std::to_string(i), x, kWidths[stage], stride,
                def.bottleneck);
    }
  x = global_avg_pool(net, "avgpool", x);
  linear(net, "fc", 1, x.channels, kClasses);
  Pipeline p = net.finish(double(net.batch()), "img");
  classifier_tensors(p, net.batch(), args.integer("image"), kClasses);
  return p;
}

PipelineDef resnet(std::string name, std::string summary, ResNetDef def, double params, double macs) {
  return {.name = std::move(name),
          .summary = std::move(summary),
          .defaults = {{"batch", "1"}, {"image", "224"}},
          .build = [def](const Args& args, DType dtype) { return build_resnet(def, args, dtype); },
          .published_params = params,
          .published_macs = macs,
          .source = "torchvision model docs (ResNet18_Weights / ResNet50_Weights.IMAGENET1K_V1: params, GFLOPS)"};
}

const Registrar resnet18(resnet("resnet18", "ResNet-18 (He et al. 2015), torchvision layout, BN folded into the convs",
                                {false, {2, 2, 2, 2}}, 11'689'512, 1.81e9));
const Registrar resnet50(resnet("resnet50",
                                "ResNet-50 v1.5 (stride on the 3x3), torchvision layout, BN folded into the convs",
                                {true, {3, 4, 6, 3}}, 25'557'032, 4.09e9));

}  // namespace
}  // namespace opmeter::pipeline
