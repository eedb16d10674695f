// The three-op attention with oneDNN, every intermediate in memory (the fusion baseline):
// batched matmul S = scale q k^T (+ causal mask as a binary post-op), softmax along keys
// (S in fp32, P in the case dtype), batched matmul O = P v. oneDNN 2.6 has no fused attention.
#include <limits>

#include "ops/attention/attention.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::attention {
namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

class OnednnUnfusedAttention : public HostImpl<AttentionOp> {
 public:
  void prepare() override {
    auto& eng = tensor::onednn_engine();
    auto s = shape_of(case_);
    auto act_t = tensor::onednn_type(case_.dtype);
    const auto bh = dnnl::memory::dim(s.heads_total()), n = dnnl::memory::dim(s.seq), d = dnnl::memory::dim(s.d);
    dnnl::memory::desc q_md({bh, n, d}, act_t, tag::abc), kt_md({bh, d, n}, act_t, tag::acb),
        v_md({bh, n, d}, act_t, tag::abc), s_md({bh, n, n}, s.stage == Stage::scores ? act_t : dt::f32, tag::abc),
        p_md({bh, n, n}, act_t, tag::abc), o_md({bh, n, d}, act_t, tag::abc), mask_md({1, n, n}, dt::f32, tag::abc);
    seq_.clear();
    auto mem = tensor::onednn_memory;

    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {s.scale()});
    if (s.causal) {
      mask_ = Buffer(std::size_t(n * n) * sizeof(float));
      for (std::size_t i = 0; i < s.seq; ++i)
        for (std::size_t j = 0; j < s.seq; ++j)
          mask_.as<float>()[i * s.seq + j] = j > i ? -std::numeric_limits<float>::infinity() : 0.0f;
      dnnl::post_ops po;
      po.append_binary(dnnl::algorithm::binary_add, mask_md);
      attr.set_post_ops(po);
    }
    if (s.stage != Stage::scores) scores_ = Buffer(std::size_t(bh * n * n) * sizeof(float));
    if (s.stage == Stage::full) probs_ = Buffer(std::size_t(bh * n * n) * size_of(case_.dtype));
    auto mm1 = tensor::onednn_try("matmul", [&] {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(q_md, kt_md, s_md), attr, eng);
    });
    seq_.add(dnnl::matmul(mm1), mm1.impl_info_str(), copies(), [&](std::size_t i) {
      tensor::OnednnArgs a{{DNNL_ARG_SRC, mem(q_md, in(i, kQ))},
                           {DNNL_ARG_WEIGHTS, mem(kt_md, in(i, kK))},
                           {DNNL_ARG_DST, mem(s_md, s.stage == Stage::scores ? out(i) : scores_.data())}};
      if (s.causal) a.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mem(mask_md, mask_.data()));
      return a;
    });
    if (s.stage == Stage::scores) return;
    auto sm = tensor::onednn_try("softmax", [&] {
      return dnnl::softmax_v2_forward::primitive_desc(
          dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, s_md,
                                         p_md, 2),
          eng);
    });
    seq_.add(dnnl::softmax_v2_forward(sm), sm.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(s_md, scores_.data())},
                                {DNNL_ARG_DST, mem(p_md, s.stage == Stage::probs ? out(i) : probs_.data())}};
    });
    if (s.stage == Stage::probs) return;
    auto mm2 = tensor::onednn_try("matmul", [&] {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(p_md, v_md, o_md), eng);
    });
    seq_.add(dnnl::matmul(mm2), mm2.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(p_md, probs_.data())},
                                {DNNL_ARG_WEIGHTS, mem(v_md, in(i, kV))},
                                {DNNL_ARG_DST, mem(o_md, out(i))}};
    });
  }

  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  Buffer mask_, scores_, probs_;  // intermediates live in memory, one set shared by all copies
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "attention",
      .impl = "onednn_unfused",
      .summary = "oneDNN matmul, softmax, matmul with S and P in memory (the fusion baseline)",
      .dtypes = {DType::fp32, DType::bf16},
      .make = [] { return std::make_unique<OnednnUnfusedAttention>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::attention
