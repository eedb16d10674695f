// oneDNN primitives for the norms it has (oneDNN 2.6 has no RMSNorm).
#include "ops/norm/norm.hpp"
#include "ops/tensor/kernels.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::norm {
namespace {
using nf = dnnl::normalization_flags;

class OnednnNorm : public HostImpl<NormOp> {
 public:
  using HostImpl::HostImpl;
  void prepare() override {
    auto& eng = tensor::onednn_engine();
    dnnl::memory::desc md({dnnl::memory::dim(out_rows()), dnnl::memory::dim(out_cols())},
                          tensor::onednn_type(case_.dtype), dnnl::memory::format_tag::ab);
    dnnl::memory::desc vec_md({dnnl::memory::dim(out_cols())}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    // Which of our inputs feeds which oneDNN argument (x is input 0).
    std::vector<std::pair<int, std::size_t>> vectors;
    const auto inference = dnnl::prop_kind::forward_inference;
    dnnl::primitive prim;
    std::string impl;
    switch (kind_) {
      case Kind::layernorm: {
        auto pd = tensor::onednn_layernorm(md);
        prim = dnnl::layer_normalization_forward(pd);
        impl = pd.impl_info_str();
        vectors = {{DNNL_ARG_SCALE, 1}, {DNNL_ARG_SHIFT, 2}};
        break;
      }
      case Kind::batchnorm: {
        auto pd = tensor::onednn_try("batch normalization", [&] {
          return dnnl::batch_normalization_forward::primitive_desc(
              dnnl::batch_normalization_forward::desc(inference, md, tensor::kNormEps,
                                                      nf::use_global_stats | nf::use_scale | nf::use_shift),
              eng);
        });
        prim = dnnl::batch_normalization_forward(pd);
        impl = pd.impl_info_str();
        vectors = {{DNNL_ARG_MEAN, 1}, {DNNL_ARG_VARIANCE, 2}, {DNNL_ARG_SCALE, 3}, {DNNL_ARG_SHIFT, 4}};
        break;
      }
      case Kind::softmax: {
        auto pd = tensor::onednn_try("softmax", [&] {
          return dnnl::softmax_v2_forward::primitive_desc(
              dnnl::softmax_v2_forward::desc(inference, dnnl::algorithm::softmax_accurate, md, md, 1), eng);
        });
        prim = dnnl::softmax_v2_forward(pd);
        impl = pd.impl_info_str();
        break;
      }
      case Kind::rmsnorm: throw Unsupported("oneDNN 2.6 has no RMSNorm primitive");
    }
    seq_.clear();
    seq_.add(prim, impl, copies(), [&](std::size_t i) {
      tensor::OnednnArgs a{{DNNL_ARG_SRC, tensor::onednn_memory(md, in(i, 0))},
                           {DNNL_ARG_DST, tensor::onednn_memory(md, out(i))}};
      for (auto [arg, input] : vectors) a.emplace(arg, tensor::onednn_memory(vec_md, in(i, input)));
      return a;
    });
  }
  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  for (auto [kind, name, summary] : {std::tuple{Kind::layernorm, "layernorm", "oneDNN layer normalization primitive"},
                                     std::tuple{Kind::batchnorm, "batchnorm", "oneDNN batch normalization primitive"},
                                     std::tuple{Kind::softmax, "softmax", "oneDNN softmax (accurate) primitive"}})
    Registry::global().add(ImplDef{
        .op = name,
        .impl = "onednn",
        .preference = ImplDef::fused_library,
        .summary = summary,
        .dtypes = {DType::fp32, DType::bf16},
        .supports = tensor::onednn_supports,
        .make = [kind] { return std::make_unique<OnednnNorm>(kind); },
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::norm
