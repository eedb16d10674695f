// transformer_block with a weight-only recipe on the CPU (impl opmeter_quant): opmeter's LayerNorm
// and blocked attention kernels as in impl `opmeter`, and the four projections through the
// quantized linear kernels (ops/linear/quant_projection.hpp), the residual adds finished in the
// projections' epilogues. The weights are quantized by the spec (QuantTransformerBlockOp) and
// repacked once per input set.

#include <algorithm>

#include <fmt/format.h>

#include "ops/transformer/block_buffers.hpp"
#include "ops/transformer/blocked_self_attention.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/quant_projection.hpp"
#include "ops/transformer/transformer_quant.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;


class OpmeterQuantBlock : public HostImpl<QuantTransformerBlockOp> {
 public:
  void prepare() override {
    const auto s = shape_of(case_);
    for (std::size_t i = 0; i < 4; ++i)
      proj_[i].prepare(quantized_weights(host_inputs(0), kWeights[i]), bf16(), s.rows(), copies());
    buf_.allocate(s, case_.dtype);
    attention_.prepare(s, case_.dtype, case_.threads);
  }

  void run(std::size_t copy) override {
    const auto s = shape_of(case_);
    const auto& k = tensor::kernels();
    const bool b16 = bf16();
    const auto& in = host_inputs(copy);
    const std::size_t r = s.rows();
    k.layernorm(b16, in[kX].data(), buf_.ln.data(), vec(in, kLn1Gamma), vec(in, kLn1Beta), r, s.hidden);
    proj_[0].run(copy, buf_.ln.data(), r, vec(in, kBqkv), Act::none, nullptr, buf_.qkv.data());
    attention(s);
    proj_[1].run(copy, buf_.attn.data(), r, vec(in, kBo), Act::none, in[kX].data(), buf_.h.data());
    k.layernorm(b16, buf_.h.data(), buf_.ln.data(), vec(in, kLn2Gamma), vec(in, kLn2Beta), r, s.hidden);
    proj_[2].run(copy, buf_.ln.data(), r, vec(in, kB1), s.act, nullptr, buf_.mlp.data());
    proj_[3].run(copy, buf_.mlp.data(), r, vec(in, kB2), Act::none, buf_.h.data(), out(copy));
  }

  std::map<std::string, std::string> details() const override {
    std::map<std::string, std::string> d = {
        {"isa", fmt::format("{}, {}", tensor::kernels().isa, linear::quant_kernels().isa)},
        {"kernel", proj_[0].kernel(shape_of(case_).rows())}};
    if (proj_[0].copies() > 1)
      d["weight_copies"] =
          fmt::format("{}: one packed copy per input set, each call reading its own", proj_[0].copies());
    return d;
  }

  std::map<std::string, Metric> metrics() const override {
    double bytes = 0;
    for (auto& p : proj_) bytes += double(p.packed().bytes());
    return {{"weight_bytes", Metric{bytes, "B", Better::lower, MetricFormat::bytes}}};
  }

 private:
  void attention(const Shape& s) { attention_.run(s, case_.dtype, buf_.qkv.data(), buf_.attn.data()); }

  linear::QuantProjection proj_[4];  // Wqkv, Wo, W1, W2
  BlockBuffers buf_;
  BlockedSelfAttention attention_;  // its gather buffers and workspaces, one per thread
};

Support supports(const Case& c) {
  if (auto why = recipe_problem(c); !why.empty()) return Support::no(why);
  const auto r = recipe_of_case(c);
  const auto s = shape_of(c);
  if (r.weights == quant::WeightFormat::int4 && (s.hidden % 32 != 0 || s.mlp % 32 != 0))
    return Support::no("opmeter_quant's int4 kernels need hidden and mlp to be multiples of 32");
  return Support::yes();
}

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "transformer_block",
      .impl = "opmeter_quant",
      .summary = "opmeter LayerNorm + blocked attention, the four projections through the quantized linear kernels "
                 "(int8/int4/fp8 weight-only)",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = supports,
      .make = [] { return std::make_unique<OpmeterQuantBlock>(); },
      .needs = {linear::kQuant},
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::transformer
