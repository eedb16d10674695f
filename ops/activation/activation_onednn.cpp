// oneDNN eltwise primitive for each activation it has.
#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::activation {
namespace {
using tensor::Act;

class OnednnActivation : public ActivationOp {
 public:
  using ActivationOp::ActivationOp;
  void prepare() override {
    dnnl::memory::desc md({dnnl::memory::dim(out_rows()), dnnl::memory::dim(out_cols())}, tensor::onednn_type(case_.dtype),
                          dnnl::memory::format_tag::ab);
    auto e = tensor::eltwise_of(act_);
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
