// RepLKNet-31B (Ding et al. 2022, "Scaling Up Your Kernels to 31x31") at inference, generated from
// its stage table as the paper's reference code builds it: a stem (3x3 s2, depthwise 3x3, 1x1,
// depthwise 3x3 s2), four stages of [RepLK block, ConvFFN] pairs with transitions (1x1, depthwise
// 3x3 s2) between them, a final BatchNorm, average pooling and a linear head.
// Re-parameterized: each RepLK block's large depthwise kernel has its small 5x5 branch merged into
// it, one depthwise conv (bn=1). The BatchNorm before each block runs as `batchnorm`, as the
// model runs it (the input it normalizes also feeds the residual unchanged).
#include <array>

#include "pipeline/builders.hpp"

namespace opmeter::pipeline {
namespace {

struct Stage {
  std::int64_t channels, blocks, large_kernel;
};

constexpr std::array<Stage, 4> kStages = {{{128, 2, 31}, {256, 2, 29}, {512, 18, 27}, {1024, 2, 13}}};
constexpr std::int64_t kFfnRatio = 4, kClasses = 1000;  // dw_ratio 1: the large kernel runs on all channels

// x + pw2(relu(large_kernel(pw1(prelkb_bn(x))))), the ReLU folded into the large kernel's conv.
void replk_block(Net& net, const std::string& name, Feature x, std::int64_t kernel) {
  batchnorm2d(net, name + ".prelkb_bn", x);
  Feature y = conv_bn_act(net, name + ".pw1", x, x.channels, 1, 1, "relu");
  y = dw_conv_bn_act(net, name + ".large_kernel", y, kernel, 1, "relu");
  y = conv_bn_act(net, name + ".pw2", y, x.channels, 1, 1, "none");
  residual_add(net, name + ".add", y);
}

// x + pw2(gelu(pw1(preffn_bn(x)))), the GELU folded into pw1's conv.
void conv_ffn(Net& net, const std::string& name, Feature x) {
  batchnorm2d(net, name + ".preffn_bn", x);
  Feature y = conv_bn_act(net, name + ".pw1", x, kFfnRatio * x.channels, 1, 1, "gelu");
  y = conv_bn_act(net, name + ".pw2", y, x.channels, 1, 1, "none");
  residual_add(net, name + ".add", y);
}

Pipeline build(const Args& args, DType dtype) {
  Net net(dtype, args.integer("batch"));
  const std::int64_t base = kStages[0].channels;
  Feature x = conv_bn_act(net, "stem.0", {3, args.integer("image")}, base, 3, 2, "relu");
  x = dw_conv_bn_act(net, "stem.1", x, 3, 1, "relu");
  x = conv_bn_act(net, "stem.2", x, base, 1, 1, "relu");
  x = dw_conv_bn_act(net, "stem.3", x, 3, 2, "relu");
  for (std::size_t s = 0; s < kStages.size(); ++s) {
    const std::string stage = "stages." + std::to_string(s) + ".blocks.";
    for (std::int64_t b = 0; b < kStages[s].blocks; ++b) {  // blocks alternate: RepLK, ConvFFN
      replk_block(net, stage + std::to_string(2 * b), x, kStages[s].large_kernel);
      conv_ffn(net, stage + std::to_string(2 * b + 1), x);
    }
    if (s + 1 < kStages.size()) {
      const std::string transition = "transitions." + std::to_string(s);
      x = conv_bn_act(net, transition + ".0", x, kStages[s + 1].channels, 1, 1, "relu");
      x = dw_conv_bn_act(net, transition + ".1", x, 3, 2, "relu");
    }
  }
  batchnorm2d(net, "norm", x);
  x = global_avg_pool(net, "avgpool", x);
  linear(net, "head", 1, x.channels, kClasses);
  Pipeline p = net.finish(double(net.batch()), "img");
  classifier_tensors(p, net.batch(), args.integer("image"), kClasses);
  return p;
}

const Registrar reg({.name = "replknet_31b",
                     .summary = "RepLKNet-31B (Ding et al. 2022), 31x31 depthwise kernels re-parameterized, BN folded "
                                "where the model allows",
                     .defaults = {{"batch", "1"}, {"image", "224"}},
                     .build = build,
                     .published_params = 79e6,
                     .published_macs = 15.3e9,
                     .source = "Ding et al., Scaling Up Your Kernels to 31x31 (CVPR 2022), ImageNet-1K results: "
                               "RepLKNet-31B at 224, 79M params, 15.3G FLOPs (multiply-adds)"});

}  // namespace
}  // namespace opmeter::pipeline
