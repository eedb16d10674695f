// oneDNN eltwise primitive for each activation it has.
#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::activation {
namespace {
using tensor::Act;
using alg = dnnl::algorithm;

struct Eltwise {
  alg algorithm;
  float alpha = 0, beta = 0;
};

Eltwise eltwise_of(Act a) {
  switch (a) {
    case Act::relu: return {alg::eltwise_relu};
    case Act::relu6: return {alg::eltwise_clip_v2, 0, 6};
    case Act::leaky_relu: return {alg::eltwise_relu, tensor::kLeakySlope};
    case Act::gelu: return {alg::eltwise_gelu_erf};
    case Act::gelu_tanh: return {alg::eltwise_gelu_tanh};
    case Act::silu: return {alg::eltwise_swish, 1};
    case Act::sigmoid: return {alg::eltwise_logistic};
    case Act::hardswish: return {alg::eltwise_hardswish};
    case Act::none: break;
  }
  return {alg::eltwise_linear, 1, 0};
}

class OnednnActivation : public ActivationOp {
 public:
  using ActivationOp::ActivationOp;
  void prepare() override {
    dnnl::memory::desc md({dnnl::memory::dim(out_rows()), dnnl::memory::dim(out_cols())}, tensor::onednn_type(case_.dtype),
                          dnnl::memory::format_tag::ab);
    auto e = eltwise_of(act_);
    auto pd = tensor::onednn_try("eltwise", [&] {
      return dnnl::eltwise_forward::primitive_desc(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, e.algorithm, md, e.alpha, e.beta),
          tensor::onednn_engine());
    });
    impl_name_ = pd.impl_info_str();
    prim_ = dnnl::eltwise_forward(pd);
    args_.clear();
    for (std::size_t i = 0; i < copies(); ++i)
      args_.push_back({{DNNL_ARG_SRC, dnnl::memory(md, tensor::onednn_engine(), const_cast<void*>(in(i, 0)))},
                       {DNNL_ARG_DST, dnnl::memory(md, tensor::onednn_engine(), out(i))}});
  }
  void run(std::size_t copy) override {
    prim_.execute(tensor::onednn_stream(), args_[copy]);
    tensor::onednn_stream().wait();
  }
  std::map<std::string, std::string> details() const override { return {{"onednn_impl", impl_name_}}; }

 private:
  dnnl::eltwise_forward prim_;
  std::vector<tensor::OnednnArgs> args_;
  std::string impl_name_;
};

const bool registered = [] {
  for (Act a : tensor::all_acts())
    Registry::global().add(ImplDef{
        .op = std::string(tensor::to_string(a)),
        .impl = "onednn",
        .summary = "oneDNN eltwise primitive",
        .dtypes = {DType::fp32, DType::bf16},
        .make = [a] { return std::make_unique<OnednnActivation>(a); },
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::activation
