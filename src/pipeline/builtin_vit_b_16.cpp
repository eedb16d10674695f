// ViT-B/16 (Dosovitskiy et al. 2020) in torchvision's layout, generated from its configuration:
// a 16x16 patch-embedding conv, class token and position table, 12 pre-LN encoder layers
// (multi-head attention, GELU MLP, two residual adds), a final LayerNorm and a linear head on the
// class token.
#include <string>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "pipeline/builders.hpp"

namespace opmeter::pipeline {
namespace {

constexpr std::int64_t kPatch = 16, kLayers = 12, kHidden = 768, kHeads = 12, kMlp = 3072, kClasses = 1000;

Pipeline build(const Args& args, DType dtype) {
  const std::int64_t image = args.integer("image");
  if (image % kPatch != 0)
    throw CaseError(fmt::format("vit_b_16 image={} must be a multiple of the patch size {}", image, kPatch));
  Net net(dtype, args.integer("batch"));
  const std::int64_t tokens = (image / kPatch) * (image / kPatch) + 1;  // patches and the class token
  const std::string n = str(net.batch()), seq = str(tokens), h = str(kHidden);
  // The patch embedding has a bias and no BatchNorm (conv2d bn=0 counts the bias).
  net.add("conv_proj", "conv2d",
          {{"batch", n},
           {"channels", "3"},
           {"out_channels", h},
           {"image", str(image)},
           {"kernel", str(kPatch)},
           {"stride", str(kPatch)},
           {"padding", "0"},
           {"groups", "1"},
           {"bn", "0"},
           {"act", "none"}});
  // Prepending the class token is a copy; adding the position table is an add over all tokens.
  const Params rows = {{"batch", n}, {"seq", seq}, {"hidden", h}};
  net.add("encoder.pos_embedding", "add", rows);
  for (std::int64_t l = 0; l < kLayers; ++l) {
    const std::string layer = "encoder.layers.encoder_layer_" + std::to_string(l);
    net.add(layer + ".ln_1", "layernorm", rows);
    linear(net, layer + ".self_attention.in_proj", tokens, kHidden, 3 * kHidden);  // q, k and v in one
    net.add(layer + ".self_attention.sdpa", "attention",
            {{"batch", n},
             {"heads", str(kHeads)},
             {"seq", seq},
             {"head_dim", str(kHidden / kHeads)},
             {"causal", "0"},
             {"stage", "full"}});
    linear(net, layer + ".self_attention.out_proj", tokens, kHidden, kHidden);
    net.add(layer + ".add_1", "add", rows);
    net.add(layer + ".ln_2", "layernorm", rows);
    linear(net, layer + ".mlp.0", tokens, kHidden, kMlp, "gelu");  // mlp.1 (GELU) folded in
    linear(net, layer + ".mlp.3", tokens, kMlp, kHidden);
    net.add(layer + ".add_2", "add", rows);
  }
  net.add("encoder.ln", "layernorm", rows);
  linear(net, "heads.head", 1, kHidden, kClasses);
  Pipeline p = net.finish(double(net.batch()), "img");
  classifier_tensors(p, net.batch(), image, kClasses);
  // The class token and the position table are parameters outside any measured layer.
  p.extra_params = double(kHidden) + double(tokens * kHidden);
  return p;
}

const Registrar reg({.name = "vit_b_16",
                     .summary = "ViT-B/16 (Dosovitskiy et al. 2020), torchvision layout",
                     .defaults = {{"batch", "1"}, {"image", "224"}},
                     .build = build,
                     .published_params = 86'567'656,
                     .published_macs = 17.56e9,
                     .source = "torchvision model docs (ViT_B_16_Weights.IMAGENET1K_V1: params, GFLOPS)"});

}  // namespace
}  // namespace opmeter::pipeline
