// oneDNN convolution, fused and unfused:
//   onednn          BatchNorm folded into the weights and bias once (as a deployed model does),
//                   the activation as a post-op: one primitive
//   onednn_unfused  convolution, then batch normalization, then eltwise, each over the output
// Weights are reordered once into the layout oneDNN prefers; x and y stay NCHW.
#include <cstring>

#include "ops/conv/conv.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::conv {
namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;
using tensor::Act;

class OnednnConv : public HostImpl<ConvOp> {
 public:
  explicit OnednnConv(bool fused) : fused_(fused) {}

  void prepare() override {
    auto& eng = tensor::onednn_engine();
    auto s = shape_of(case_);
    auto act_t = tensor::onednn_type(case_.dtype);
    auto d = [](std::size_t v) { return dnnl::memory::dim(v); };
    dnnl::memory::desc x_md({d(s.n), d(s.c), d(s.h), d(s.h)}, act_t, tag::nchw),
        y_md({d(s.n), d(s.oc), d(s.oh), d(s.oh)}, act_t, tag::nchw), b_md({d(s.oc)}, dt::f32, tag::a),
        vec_md({d(s.oc)}, dt::f32, tag::a);
    dims w_dims = s.groups == 1 ? dims{d(s.oc), d(s.c), d(s.r), d(s.r)}
                                : dims{d(s.groups), d(s.oc / s.groups), d(s.cg()), d(s.r), d(s.r)};
    dnnl::memory::desc w_plain(w_dims, act_t, s.groups == 1 ? tag::oihw : tag::goihw);
    dnnl::memory::desc w_any(w_dims, act_t, tag::any);

    auto pd = tensor::onednn_try("convolution", [&] {
      return dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_md,
                                          w_any, b_md, y_md, {d(s.stride), d(s.stride)}, {d(s.pad), d(s.pad)},
                                          {d(s.pad), d(s.pad)}),
          tensor::onednn_act_post_op(fused_ ? s.act : Act::none), eng);
    });
    seq_.clear();
    auto mem = tensor::onednn_memory;

    // Weights (folded with BN when fused) in oneDNN's layout and biases, once per copy.
    const std::size_t w_count = s.oc * s.cg() * s.r * s.r;
    biases_.clear();
    std::vector<dnnl::memory> weights;
    for (std::size_t i = 0; i < copies(); ++i) {
      Buffer w_src(w_count * size_of(case_.dtype)), bias(s.oc * sizeof(float));
      std::memcpy(w_src.data(), in(i, kW), w_src.bytes());
      std::memcpy(bias.data(), in(i, kBias), bias.bytes());
      if (fused_ && s.bn) fold(i, s, w_src, bias);
      dnnl::memory w_mem(pd.weights_desc(), eng);
      dnnl::memory w_given(w_plain, eng, w_src.data());
      dnnl::reorder(w_given, w_mem).execute(tensor::onednn_stream(), w_given, w_mem);
      tensor::onednn_stream().wait();
      weights.push_back(w_mem);
      biases_.push_back(std::move(bias));
    }
    seq_.add(dnnl::convolution_forward(pd), pd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(x_md, in(i, kX))},
                                {DNNL_ARG_WEIGHTS, weights[i]},
                                {DNNL_ARG_BIAS, mem(b_md, biases_[i].data())},
                                {DNNL_ARG_DST, mem(y_md, out(i))}};
    });
    if (fused_) return;
    if (s.bn) {
      auto bn_pd = tensor::onednn_try("batch normalization", [&] {
        using nf = dnnl::normalization_flags;
        return dnnl::batch_normalization_forward::primitive_desc(
            dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, y_md, tensor::kNormEps,
                                                    nf::use_global_stats | nf::use_scale | nf::use_shift),
            eng);
      });
      seq_.add(dnnl::batch_normalization_forward(bn_pd), bn_pd.impl_info_str(), copies(), [&](std::size_t i) {
        return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(y_md, out(i))},        {DNNL_ARG_DST, mem(y_md, out(i))},
                                  {DNNL_ARG_MEAN, mem(vec_md, in(i, kMean))}, {DNNL_ARG_VARIANCE, mem(vec_md, in(i, kVar))},
                                  {DNNL_ARG_SCALE, mem(vec_md, in(i, kGamma))}, {DNNL_ARG_SHIFT, mem(vec_md, in(i, kBeta))}};
      });
    }
    if (s.act != Act::none) {
      auto el_pd = tensor::onednn_eltwise(s.act, y_md);
      seq_.add(dnnl::eltwise_forward(el_pd), el_pd.impl_info_str(), copies(), [&](std::size_t i) {
        return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(y_md, out(i))}, {DNNL_ARG_DST, mem(y_md, out(i))}};
      });
    }
  }

  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  // BN folded into this copy's weights and bias (weights converted through fp32 for bf16).
  void fold(std::size_t copy, const Shape& s, Buffer& w, Buffer& bias) {
    const std::size_t per_oc = s.cg() * s.r * s.r, count = s.oc * per_oc;
    std::vector<float> w32(count), out(count);
    const HostTensors& in = host_inputs(copy);
    for (std::size_t k = 0; k < count; ++k) w32[k] = static_cast<float>(load(act(), w.data(), k));
    std::vector<float> b32(bias.as<float>(), bias.as<float>() + s.oc);
    fold_batchnorm(w32.data(), b32.data(), vec(in, kMean), vec(in, kVar), vec(in, kGamma), vec(in, kBeta), s.oc, per_oc,
                   out.data(), bias.as<float>());
    for (std::size_t k = 0; k < count; ++k) store(act(), w.data(), k, out[k]);
  }

  bool fused_;
  std::vector<Buffer> biases_;
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "conv2d",
      .impl = "onednn",
      .preference = ImplDef::fused_library,
      .summary = "oneDNN convolution with BN folded into weights and activation post-op (fused)",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = tensor::onednn_supports,
      .make = [] { return std::make_unique<OnednnConv>(true); },
  });
  Registry::global().add(ImplDef{
      .op = "conv2d",
      .impl = "onednn_unfused",
      .preference = ImplDef::unfused,
      .summary = "oneDNN convolution, batch normalization and eltwise primitives in sequence (the fusion baseline)",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = tensor::onednn_supports,
      .make = [] { return std::make_unique<OnednnConv>(false); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::conv
