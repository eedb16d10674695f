// impl `onednn`: oneDNN's pooling primitive (pooling_max, or pooling_avg_include_padding as
// PyTorch's default average), x and y NCHW as given.
#include <algorithm>

#include "ops/pool/pool.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::pool {
namespace {
using tag = dnnl::memory::format_tag;

class OnednnPool : public HostImpl<PoolOp> {
 public:
  void prepare() override {
    auto s = shape_of(case_);
    auto t = tensor::onednn_type(case_.dtype);
    auto d = [](std::size_t v) { return dnnl::memory::dim(v); };
    dnnl::memory::desc x_md({d(s.n), d(s.c), d(s.h), d(s.h)}, t, tag::nchw);
    dnnl::memory::desc y_md({d(s.n), d(s.c), d(s.oh), d(s.oh)}, t, tag::nchw);
    // oneDNN wants the right padding the last window actually reaches (never above `padding`,
    // and 0 where the floor of the output size leaves the last rows unread).
    const auto right = std::max<dnnl::memory::dim>(0, d((s.oh - 1) * s.stride + s.k) - d(s.h) - d(s.pad));
    const auto algo = s.kind == Kind::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
    auto pd = tensor::onednn_try("pooling", [&] {
      return dnnl::pooling_forward::primitive_desc(
          dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, algo, x_md, y_md, {d(s.stride), d(s.stride)},
                                      {d(s.k), d(s.k)}, {d(s.pad), d(s.pad)}, {right, right}),
          tensor::onednn_engine());
    });
    seq_.clear();
    seq_.add(dnnl::pooling_forward(pd), pd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, tensor::onednn_memory(x_md, in(i, kX))},
                                {DNNL_ARG_DST, tensor::onednn_memory(y_md, out(i))}};
    });
  }
  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  tensor::OnednnSequence seq_;
};

ImplRegistrar reg({
    .op = "pool2d",
    .impl = "onednn",
    .preference = ImplDef::fused_library,
    .summary = "oneDNN pooling primitive (max, or average with padding counted), NCHW",
    .dtypes = {DType::fp32, DType::bf16},
    .supports = tensor::onednn_supports,
    .make = [] { return std::make_unique<OnednnPool>(); },
});

}  // namespace
}  // namespace opmeter::pool
