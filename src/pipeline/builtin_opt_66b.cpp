// OPT-66B (Zhang et al. 2022) decoder layers: hidden 9216, 72 heads of 128, FFN 36864 with ReLU,
// pre-LayerNorm. The model has 64 identical layers and does not fit one GPU, so a pipeline is one
// layer's ops, each counted 64 times; embeddings and the LM head are not part of it.
// Prefill runs `seq` tokens per sequence through causal attention; decode runs one new token per
// sequence attending over a KV cache of `kv` positions.
#include "pipeline/builders.hpp"

namespace opmeter::pipeline {
namespace {

constexpr std::int64_t kLayers = 64, kHidden = 9216, kHeads = 72, kHeadDim = 128, kFfn = 36864;

// One decoder layer on `tokens` new tokens per sequence, its attention core the op
// `attention_op` with `attention_params`.
Pipeline decoder_layer(const Args& args, DType dtype, std::int64_t tokens, const std::string& attention_op,
                       const Params& attention_params) {
  Net net(dtype, args.integer("batch"));
  const std::string n = str(net.batch()), t = str(tokens), h = str(kHidden);
  const Params rows = {{"batch", n}, {"seq", t}, {"hidden", h}};
  auto add = [&](const std::string& label, const std::string& op, const Params& params) {
    net.add("decoder." + label, op, params, kLayers);
  };
  add("self_attn_layer_norm", "layernorm", rows);
  // q_proj, k_proj and v_proj (each with a bias) as one linear: the same weights and MACs.
  add("self_attn.qkv_proj", "linear", {{"batch", n}, {"seq", t}, {"hidden", h}, {"out", str(3 * kHidden)}});
  add("self_attn.sdpa", attention_op, attention_params);
  add("self_attn.out_proj", "linear", {{"batch", n}, {"seq", t}, {"hidden", h}, {"out", h}});
  add("add_1", "add", rows);
  add("final_layer_norm", "layernorm", rows);
  add("fc1", "linear", {{"batch", n}, {"seq", t}, {"hidden", h}, {"out", str(kFfn)}, {"act", "relu"}});
  add("fc2", "linear", {{"batch", n}, {"seq", t}, {"hidden", str(kFfn)}, {"out", h}});
  add("add_2", "add", rows);
  Pipeline p = net.finish(double(net.batch() * tokens), "token");
  // The model run whole is this one layer: hidden states of the new tokens in and out.
  p.model_input = {"hidden", double(net.batch() * tokens * kHidden)};
  p.model_output = {"hidden_out", p.model_input.elements};
  return p;
}

Pipeline prefill(const Args& args, DType dtype) {
  const std::string seq = str(args.integer("seq"));
  return decoder_layer(args, dtype, args.integer("seq"), "attention",
                       {{"batch", str(args.integer("batch"))},
                        {"heads", str(kHeads)},
                        {"seq", seq},
                        {"head_dim", str(kHeadDim)},
                        {"causal", "1"},
                        {"stage", "full"}});
}

Pipeline decode(const Args& args, DType dtype) {
  return decoder_layer(args, dtype, 1, "decode_attention",
                       {{"batch", str(args.integer("batch"))},
                        {"heads", str(kHeads)},
                        {"kv", str(args.integer("kv"))},
                        {"head_dim", str(kHeadDim)}});
}

// 64 x (12 h^2 + 13 h) = 65.2 B parameters in the decoder layers (66 B with the embeddings).
constexpr double kDecoderParams = 65.2e9;
constexpr const char* kSource =
    "Zhang et al., OPT: Open Pre-trained Transformer Language Models (2022), Table 1: 64 layers, 72 heads, "
    "d_model 9216 (66B with embeddings; the decoder layers hold 64 x (12 h^2 + 13 h))";

const Registrar prefill_reg({.name = "opt_66b_prefill",
                             .summary = "OPT-66B prefill: one decoder layer's ops on seq tokens, counted 64 times",
                             .defaults = {{"batch", "1"}, {"seq", "2048"}},
                             .build = prefill,
                             .published_params = kDecoderParams,
                             .published_macs = 0,
                             .source = kSource,
                             .end_to_end_scale = kLayers});
const Registrar decode_reg({.name = "opt_66b_decode",
                            .summary = "OPT-66B decode: one decoder layer's ops on one new token over a KV cache of "
                                       "kv positions, counted 64 times",
                            .defaults = {{"batch", "1"}, {"kv", "2048"}},
                            .build = decode,
                            .published_params = kDecoderParams,
                            .published_macs = 0,
                            .source = kSource,
                            .end_to_end_scale = kLayers});

}  // namespace
}  // namespace opmeter::pipeline
