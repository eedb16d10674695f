// oneDNN linear layers, fused and unfused:
//   onednn          matmul with bias and the activation as a post-op (LayerNorm before it, when
//                   the op has one, is its own primitive: oneDNN 2.6 cannot fuse it into matmul)
//   onednn_unfused  every step its own primitive, intermediates in memory: [layer norm,]
//                   matmul, binary add of the bias, eltwise activation (the last two in place)
#include "ops/linear/linear.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::linear {
namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using tensor::Act;

class OnednnLinear : public HostImpl<LinearOp> {
 public:
  explicit OnednnLinear(bool fused) : fused_(fused) {}

  void prepare() override {
    auto s = shape_of(case_);
    auto act_t = tensor::onednn_type(case_.dtype);
    const auto rows = dnnl::memory::dim(s.rows), h = dnnl::memory::dim(s.hidden), o = dnnl::memory::dim(s.out);
    dnnl::memory::desc x_md({rows, h}, act_t, tag::ab), w_md({h, o}, act_t, tag::ba), y_md({rows, o}, act_t, tag::ab),
        bias_md({1, o}, dt::f32, tag::ab), vec_md({h}, dt::f32, tag::a);
    seq_.clear();
    auto mem = tensor::onednn_memory;
    if (s.layernorm) {
      xhat_ = Buffer(std::size_t(rows * h) * size_of(case_.dtype));
      auto pd = tensor::onednn_layernorm(x_md);
      seq_.add(dnnl::layer_normalization_forward(pd), pd.impl_info_str(), copies(), [&](std::size_t i) {
        return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(x_md, in(i, kX))},
                                  {DNNL_ARG_DST, mem(x_md, xhat_.data())},
                                  {DNNL_ARG_SCALE, mem(vec_md, in(i, kGamma))},
                                  {DNNL_ARG_SHIFT, mem(vec_md, in(i, kBeta))}};
      });
    }
    auto mm_pd = tensor::onednn_matmul(x_md, w_md, fused_ ? &bias_md : nullptr, y_md,
                                       tensor::onednn_act_post_op(fused_ ? s.act : Act::none));
    seq_.add(dnnl::matmul(mm_pd), mm_pd.impl_info_str(), copies(), [&](std::size_t i) {
      tensor::OnednnArgs m{{DNNL_ARG_SRC, mem(x_md, s.layernorm ? xhat_.data() : in(i, kX))},
                           {DNNL_ARG_WEIGHTS, mem(w_md, in(i, kW))},
                           {DNNL_ARG_DST, mem(y_md, out(i))}};
      if (fused_) m.emplace(DNNL_ARG_BIAS, mem(bias_md, in(i, kBias)));
      return m;
    });
    if (fused_) return;
    auto add_pd = tensor::onednn_add(y_md, bias_md, y_md);
    seq_.add(dnnl::binary(add_pd), add_pd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC_0, mem(y_md, out(i))}, {DNNL_ARG_SRC_1, mem(bias_md, in(i, kBias))},
                                {DNNL_ARG_DST, mem(y_md, out(i))}};
    });
    if (s.act == Act::none) return;
    auto el_pd = tensor::onednn_eltwise(s.act, y_md);
    seq_.add(dnnl::eltwise_forward(el_pd), el_pd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(y_md, out(i))}, {DNNL_ARG_DST, mem(y_md, out(i))}};
    });
  }

  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  bool fused_;
  Buffer xhat_;  // LayerNorm output (intermediate in memory)
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  for (auto& op : linear_ops()) {
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "onednn",
        .preference = ImplDef::fused_library,
        .summary = "oneDNN matmul with bias and activation post-op (fused)",
        .dtypes = {DType::fp32, DType::bf16},
        .supports = tensor::onednn_supports,
        .make = [] { return std::make_unique<OnednnLinear>(true); },
    });
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "onednn_unfused",
        .preference = ImplDef::unfused,
        .summary = "oneDNN primitives one after another, intermediates in memory (the fusion baseline)",
        .dtypes = {DType::fp32, DType::bf16},
        .supports = tensor::onednn_supports,
        .make = [] { return std::make_unique<OnednnLinear>(false); },
    });
  }
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
