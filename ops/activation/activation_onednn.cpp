// oneDNN eltwise primitive for each activation it has.
#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::activation {
namespace {
using tensor::Act;

class OnednnActivation : public HostImpl<ActivationOp> {
 public:
  using HostImpl::HostImpl;
  void prepare() override {
    dnnl::memory::desc md({dnnl::memory::dim(out_rows()), dnnl::memory::dim(out_cols())}, tensor::onednn_type(case_.dtype),
                          dnnl::memory::format_tag::ab);
    auto pd = tensor::onednn_eltwise(act_, md);
    seq_.clear();
    seq_.add(dnnl::eltwise_forward(pd), pd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, tensor::onednn_memory(md, in(i, 0))},
                                {DNNL_ARG_DST, tensor::onednn_memory(md, out(i))}};
    });
  }
  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  for (Act a : tensor::all_acts())
    Registry::global().add(ImplDef{
        .op = std::string(tensor::to_string(a)),
        .impl = "onednn",
        .preference = ImplDef::fused_library,
        .summary = "oneDNN eltwise primitive",
        .dtypes = {DType::fp32, DType::bf16},
        .supports = tensor::onednn_supports,
        .make = [a] { return std::make_unique<OnednnActivation>(a); },
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::activation
