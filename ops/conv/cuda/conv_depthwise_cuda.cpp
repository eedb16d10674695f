// impl `cuda`: opmeter's depthwise convolution kernels (depthwise_kernel.cu) for conv2d with
// groups = channels = out_channels; other convolutions are cuDNN's (skipped here with the reason).
// BatchNorm is folded into fp32 weights and bias on the host once per set of inputs (prepare),
// as a deployed model does; bias and activation are fused into the kernel.
#include <vector>

#include <fmt/format.h>

#include "ops/conv/conv.hpp"
#include "ops/conv/cuda/depthwise_kernel.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::conv {
namespace {

DepthwiseArgs args_of(const Shape& s) {
  using I = std::int64_t;
  return DepthwiseArgs{.x = nullptr, .w = nullptr, .bias = nullptr, .y = nullptr, .n = I(s.n), .c = I(s.c),
                       .h = I(s.h), .r = I(s.r), .stride = I(s.stride), .pad = I(s.pad), .oh = I(s.oh), .act = s.act};
}

class CudaDepthwise : public cuda::DeviceImpl<ConvOp> {
 public:
  std::map<std::string, std::string> details() const override {
    return {{"kernel", fmt::format("{}; fp32 weights (BN folded) and accumulation, bias and activation fused",
                                   to_string(depthwise_path(args_of(shape_of(case_)))))}};
  }

 private:
  void prepare() override {
    const Shape s = shape_of(case_);
    const std::size_t per_c = s.r * s.r, count = s.c * per_c, e = elem_bytes(act());
    std::vector<std::byte> w_raw(count * e);
    std::vector<float> w(count), bias(s.c);
    cuda::download(w_raw.data(), in(kW), w_raw.size(), stream());
    cuda::download(bias.data(), in(kBias), bias.size() * sizeof(float), stream());
    for (std::size_t k = 0; k < count; ++k) w[k] = static_cast<float>(load(act(), w_raw.data(), k));
    if (s.bn) {
      std::vector<float> mean(s.c), var(s.c), gamma(s.c), beta(s.c), w_folded(count), b_folded(s.c);
      const std::pair<std::vector<float>*, std::size_t> params[] = {{&mean, kMean}, {&var, kVar}, {&gamma, kGamma}, {&beta, kBeta}};
      for (auto [dst, i] : params) cuda::download(dst->data(), in(i), s.c * sizeof(float), stream());
      fold_batchnorm(w.data(), bias.data(), mean.data(), var.data(), gamma.data(), beta.data(), s.c, per_c,
                     w_folded.data(), b_folded.data());
      w.swap(w_folded);
      bias.swap(b_folded);
    }
    if (w_.bytes() != count * sizeof(float)) w_ = cuda::DeviceBuffer(count * sizeof(float));
    if (bias_.bytes() != s.c * sizeof(float)) bias_ = cuda::DeviceBuffer(s.c * sizeof(float));
    cuda::upload(w_.data(), w.data(), w.size() * sizeof(float), stream());
    cuda::upload(bias_.data(), bias.data(), bias.size() * sizeof(float), stream());
  }

  void launch() override {
    DepthwiseArgs a = args_of(shape_of(case_));
    a.x = in(kX);
    a.w = static_cast<const float*>(w_.data());
    a.bias = static_cast<const float*>(bias_.data());
    a.y = out();
    launch_depthwise(case_.dtype, a, stream());
  }

  cuda::DeviceBuffer w_, bias_;
};

Support supported(const Case& c, const cuda::DeviceProps& p) {
  if (auto own = cuda::own_kernels_run_on(p); !own.ok) return own;
  const Shape s = shape_of(c);
  if (s.groups != s.c || s.oc != s.c)
    return Support::no(fmt::format("depthwise only (groups = channels = out_channels): groups={}, channels={}, "
                                   "out_channels={}",
                                   s.groups, s.c, s.oc));
  return Support::yes();
}

}  // namespace

// The plugin's half of this impl, named by its declaration in conv_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = supported,
      .make = [] { return std::make_unique<CudaDepthwise>(); },
  };
}

}  // namespace opmeter::conv
