// The three-op attention with oneDNN, every intermediate in memory (the fusion baseline):
// batched matmul S = scale q k^T (+ causal mask as a binary post-op), softmax along keys
// (S in fp32, P in the case dtype), batched matmul O = P v. oneDNN 2.6 has no fused attention.
#include "ops/attention/attention.hpp"
#include "ops/attention/attention_onednn_steps.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::attention {
namespace {
using tag = dnnl::memory::format_tag;

class OnednnUnfusedAttention : public HostImpl<AttentionOp> {
 public:
  void prepare() override {
    auto s = shape_of(case_);
    auto act_t = tensor::onednn_type(case_.dtype);
    const auto bh = dnnl::memory::dim(s.heads_total()), n = dnnl::memory::dim(s.seq), d = dnnl::memory::dim(s.d);
    OnednnAttentionLayout md{{{bh, n, d}, act_t, tag::abc},
                             {{bh, d, n}, act_t, tag::acb},
                             {{bh, n, d}, act_t, tag::abc},
                             {{bh, n, d}, act_t, tag::abc}};
    seq_.clear();
    steps_.add(
        seq_, md, case_.dtype, s.scale(), s.causal, s.stage, copies(), [&](std::size_t i) { return in(i, kQ); },
        [&](std::size_t i) { return in(i, kK); }, [&](std::size_t i) { return in(i, kV); },
        [&](std::size_t i) { return out(i); });
  }

  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  OnednnAttentionSteps steps_;
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "attention",
      .impl = "onednn_unfused",
      .preference = ImplDef::unfused,
      .summary = "oneDNN matmul, softmax, matmul with S and P in memory (the fusion baseline)",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = tensor::onednn_supports,
      .make = [] { return std::make_unique<OnednnUnfusedAttention>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::attention
