// conv2d through cuDNN's graph API, one fused operation graph:
//   conv_fprop(x, w) (fp32 accumulation)  ->  + bias  ->  activation  ->  y
// BatchNorm is folded into the weights and bias once (as a deployed model does), like onednn.
//   cudnn       x, w and y in the spec's NCHW layout
//   cudnn_nhwc  cuDNN computes in NHWC (and KRSC weights), the layout its tensor-core engines
//               prefer: x and w are transposed when the inputs arrive, y back to NCHW only for
//               the check, all outside the timed call.
//   cudnn_unfused  the convolution alone through cuDNN's graph (NCHW, the weights as given: BN not
//               folded), then our per-channel pass over y (channel_pass.cu): the conv's bias and
//               BatchNorm (inference, per output channel), then the activation as a pass of its
//               own where BN is there; without BN the bias rides in the activation's pass. So y
//               goes through memory once per BN and activation, as conv2d's unfused work model
//               counts (which takes conv + bias as one step, as onednn_unfused's primitive).
// Whatever cuDNN cannot fuse (no engine for the layout, dtype, groups or activation) is skipped
// with cuDNN's reason.
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "ops/conv/conv.hpp"
#include "ops/conv/cudnn/channel_pass.hpp"
#include "opmeter/cuda/cudnn_graph.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::conv {
namespace {
using tensor::Act;

struct ActMode {
  cudnnPointwiseMode_t mode;
  cudnn::Graph::PointwiseOptions options;
};

// cuDNN's pointwise form of an activation; none where cuDNN has no such mode.
std::optional<ActMode> act_mode(Act a) {
  switch (a) {
    case Act::relu: return ActMode{CUDNN_POINTWISE_RELU_FWD, {}};
    case Act::relu6: return ActMode{CUDNN_POINTWISE_RELU_FWD, {.relu_upper_clip = 6.0f}};
    case Act::leaky_relu: return ActMode{CUDNN_POINTWISE_RELU_FWD, {.relu_lower_clip_slope = tensor::kLeakySlope}};
    case Act::gelu: return ActMode{CUDNN_POINTWISE_GELU_FWD, {}};
    case Act::gelu_tanh: return ActMode{CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, {}};
    case Act::silu: return ActMode{CUDNN_POINTWISE_SWISH_FWD, {.swish_beta = 1.0f}};
    case Act::sigmoid: return ActMode{CUDNN_POINTWISE_SIGMOID_FWD, {}};
    default: return std::nullopt;
  }
}

// Moves `channels` planes of `plane` elements each (size `e` bytes) between channel-first and
// channel-last order, for each of `outer` images: NCHW <-> NHWC, OIHW <-> OHWI.
void to_channels_last(const std::byte* src, std::byte* dst, std::size_t outer, std::size_t channels, std::size_t plane,
                      std::size_t e) {
  for (std::size_t n = 0; n < outer; ++n)
    for (std::size_t c = 0; c < channels; ++c)
      for (std::size_t p = 0; p < plane; ++p)
        std::memcpy(dst + ((n * plane + p) * channels + c) * e, src + ((n * channels + c) * plane + p) * e, e);
}
void to_channels_first(const std::byte* src, std::byte* dst, std::size_t outer, std::size_t channels, std::size_t plane,
                       std::size_t e) {
  for (std::size_t n = 0; n < outer; ++n)
    for (std::size_t c = 0; c < channels; ++c)
      for (std::size_t p = 0; p < plane; ++p)
        std::memcpy(dst + ((n * channels + c) * plane + p) * e, src + ((n * plane + p) * channels + c) * e, e);
}

class CudnnConv : public cuda::DeviceImpl<ConvOp> {
 public:
  CudnnConv(bool nhwc, bool fused) : nhwc_(nhwc), fused_(fused) {}

  std::map<std::string, std::string> details() const override {
    if (!plan_) return {};
    std::map<std::string, std::string> d = {{"engine", plan_->engine()},
                                            {"workspace_bytes", std::to_string(plan_->workspace_bytes())},
                                            {"layout", nhwc_ ? "NHWC (KRSC weights)" : "NCHW"}};
    if (!fused_) d["passes"] = passes_text(shape_of(case_));
    return d;
  }

  Check verify(std::uint64_t seed) override {
    checking_ = true;
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{checking_};
    return DeviceImpl::verify(seed);
  }

 private:
  void prepare() override {
    const Shape s = shape_of(case_);
    if (!plan_) build(s);
    if (!fused_) {
      sms_ = cuda::props(device()).prop.multiProcessorCount;
      plan_->bind({{x_uid_, in(kX)}, {w_uid_, in(kW)}, {y_uid_, out()}}, workspace_.data());
      return;
    }
    fold_weights(s);
    if (nhwc_) {
      const std::size_t e = elem_bytes(act());
      std::vector<std::byte> x(s.n * s.c * s.h * s.h * e), t(x.size());
      cuda::download(x.data(), in(kX), x.size(), stream());
      to_channels_last(x.data(), t.data(), s.n, s.c, s.h * s.h, e);
      cuda::upload(x_nhwc_.data(), t.data(), t.size(), stream());
    }
    plan_->bind({{x_uid_, nhwc_ ? x_nhwc_.data() : in(kX)},
                 {w_uid_, w_.data()},
                 {b_uid_, bias_.data()},
                 {y_uid_, nhwc_ ? y_nhwc_.data() : out()}},
                workspace_.data());
  }

  void launch() override {
    if (checking_ && nhwc_) cuda::fill(y_nhwc_.data(), poison_byte(act()), y_nhwc_.bytes(), stream());
    plan_->execute();
    if (!fused_) run_passes();
    if (checking_ && nhwc_) output_to_nchw();
  }

  // cudnn_unfused: bias [+ BN] in the first pass over the conv's output, the activation in its own
  // pass after BN (or in the bias's pass without BN).
  void run_passes() {
    const Shape s = shape_of(case_);
    const auto images = static_cast<std::int64_t>(s.n), channels = static_cast<std::int64_t>(s.oc),
               plane = static_cast<std::int64_t>(s.oh * s.oh);
    auto param = [this](std::size_t i) { return static_cast<const float*>(in(i)); };
    ChannelPass first{.bias = param(kBias), .act = s.bn ? Act::none : s.act};
    if (s.bn) {
      first.mean = param(kMean);
      first.var = param(kVar);
      first.gamma = param(kGamma);
      first.beta = param(kBeta);
    }
    launch_channel_pass(case_.dtype, out(), first, images, channels, plane, sms_, stream());
    if (s.bn && s.act != Act::none)
      launch_channel_pass(case_.dtype, out(), ChannelPass{.act = s.act}, images, channels, plane, sms_, stream());
  }

  static std::string passes_text(const Shape& s) {
    const auto act = tensor::to_string(s.act);
    if (s.bn)
      return s.act == Act::none ? "conv, bias + BatchNorm kernel"
                                : fmt::format("conv, bias + BatchNorm kernel, {} kernel", act);
    return s.act == Act::none ? "conv, bias kernel" : fmt::format("conv, bias + {} kernel", act);
  }

  // The check reads y in NCHW: bring the NHWC result back, reorder it, and put it in out().
  void output_to_nchw() {
    const Shape s = shape_of(case_);
    const std::size_t e = elem_bytes(act());
    std::vector<std::byte> y(y_nhwc_.bytes()), t(y.size());
    cuda::download(y.data(), y_nhwc_.data(), y.size(), stream());
    to_channels_first(y.data(), t.data(), s.n, s.oc, s.oh * s.oh, e);
    cuda::upload(out(), t.data(), t.size(), stream());
  }

  // Weights and bias as cuDNN reads them: BN folded in when the case has it (through fp32),
  // the weights reordered to KRSC for NHWC.
  void fold_weights(const Shape& s) {
    const std::size_t per_oc = s.cg() * s.r * s.r, count = s.oc * per_oc, e = elem_bytes(act());
    std::vector<std::byte> w(count * e);
    std::vector<float> bias(s.oc);
    cuda::download(w.data(), in(kW), w.size(), stream());
    cuda::download(bias.data(), in(kBias), bias.size() * sizeof(float), stream());
    if (s.bn) {
      std::vector<float> w32(count), folded(count), mean(s.oc), var(s.oc), gamma(s.oc), beta(s.oc), b_out(s.oc);
      const std::pair<std::vector<float>*, std::size_t> params[] = {{&mean, kMean}, {&var, kVar}, {&gamma, kGamma}, {&beta, kBeta}};
      for (auto [dst, i] : params) cuda::download(dst->data(), in(i), s.oc * sizeof(float), stream());
      for (std::size_t k = 0; k < count; ++k) w32[k] = static_cast<float>(load(act(), w.data(), k));
      fold_batchnorm(w32.data(), bias.data(), mean.data(), var.data(), gamma.data(), beta.data(), s.oc, per_oc,
                     folded.data(), b_out.data());
      for (std::size_t k = 0; k < count; ++k) store(act(), w.data(), k, folded[k]);
      bias = b_out;
    }
    if (nhwc_) {
      std::vector<std::byte> t(w.size());
      to_channels_last(w.data(), t.data(), s.oc, s.cg(), s.r * s.r, e);
      w.swap(t);
    }
    cuda::upload(w_.data(), w.data(), w.size(), stream());
    cuda::upload(bias_.data(), bias.data(), bias.size() * sizeof(float), stream());
  }

  void build(const Shape& s) {
    using I = std::int64_t;
    const cudnnDataType_t io = cudnn::data_type(case_.dtype), f32 = CUDNN_DATA_FLOAT;
    auto layout = [this](const std::vector<I>& dims) {
      return nhwc_ ? cudnn::strides_for(dims, {0, 2, 3, 1}) : cudnn::packed_strides(dims);
    };
    const std::vector<I> x_dims = {I(s.n), I(s.c), I(s.h), I(s.h)}, w_dims = {I(s.oc), I(s.cg()), I(s.r), I(s.r)},
                         y_dims = {I(s.n), I(s.oc), I(s.oh), I(s.oh)}, b_dims = {1, I(s.oc), 1, 1};
    handle_ = std::make_unique<cudnn::Handle>(stream());
    cudnn::Graph g;
    auto x = g.tensor(x_dims, layout(x_dims), io);
    auto w = g.tensor(w_dims, layout(w_dims), io);
    auto y = g.tensor(y_dims, layout(y_dims), io);
    x_uid_ = x.uid;
    w_uid_ = w.uid;
    y_uid_ = y.uid;
    if (!fused_) {
      // The convolution alone, straight into y; bias, BN and activation are our passes.
      g.conv_fprop(x, w, y, I(s.stride), I(s.pad));
      plan_ = std::make_unique<cudnn::Plan>(*handle_, std::move(g), case_.dtype, "conv2d NCHW convolution alone");
      workspace_ = cuda::DeviceBuffer(std::size_t(plan_->workspace_bytes()));
      return;
    }
    // The bias in the same layout as y (its strides as cuDNN's NHWC samples give them).
    auto bias = g.tensor(b_dims, layout(b_dims), f32);
    auto conv = g.virtual_tensor(y_dims, layout(y_dims), f32);
    g.conv_fprop(x, w, conv, I(s.stride), I(s.pad));
    auto act_fn = act_mode(s.act);
    auto biased = act_fn ? g.virtual_tensor(y_dims, layout(y_dims), f32) : y;
    g.pointwise(CUDNN_POINTWISE_ADD, conv, bias, biased);
    if (act_fn) g.pointwise(act_fn->mode, biased, std::nullopt, std::nullopt, y, act_fn->options);

    plan_ = std::make_unique<cudnn::Plan>(
        *handle_, std::move(g), case_.dtype, fmt::format("conv2d{} {}", nhwc_ ? " NHWC" : " NCHW", shape_pattern(s)));
    workspace_ = cuda::DeviceBuffer(std::size_t(plan_->workspace_bytes()));
    b_uid_ = bias.uid;
    const std::size_t e = elem_bytes(act());
    w_ = cuda::DeviceBuffer(s.oc * s.cg() * s.r * s.r * e);
    bias_ = cuda::DeviceBuffer(s.oc * sizeof(float));
    if (nhwc_) {
      x_nhwc_ = cuda::DeviceBuffer(s.n * s.c * s.h * s.h * e);
      y_nhwc_ = cuda::DeviceBuffer(s.n * s.oc * s.oh * s.oh * e);
    }
  }

  static std::string shape_pattern(const Shape& s) {
    std::string p = "conv+bias";
    if (s.act != Act::none) p.append("+").append(tensor::to_string(s.act));
    return p;
  }

  bool nhwc_;
  bool fused_;
  bool checking_ = false;
  int sms_ = 1;
  // Declared in destruction order: the plan refers to the handle.
  std::unique_ptr<cudnn::Handle> handle_;
  std::unique_ptr<cudnn::Plan> plan_;
  cuda::DeviceBuffer workspace_, w_, bias_, x_nhwc_, y_nhwc_;
  std::int64_t x_uid_ = 0, w_uid_ = 0, b_uid_ = 0, y_uid_ = 0;
};

// cudnn_unfused: cuDNN's convolution and our kernels, every activation.
Support unfused_supported(const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); }

Support supported(const Case& c, const cuda::DeviceProps&) {
  auto s = shape_of(c);
  if (s.act != Act::none && !act_mode(s.act))
    return Support::no(fmt::format("cuDNN's pointwise operations have no {}", tensor::to_string(s.act)));
  return Support::yes();
}

}  // namespace

// The plugin's half of these impls, named by their declarations in conv_cudnn_impls.cpp.
cuda::Factory cudnn_factory() {
  return {
      .supports = supported,
      .make = [] { return std::make_unique<CudnnConv>(false, true); },
  };
}

cuda::Factory cudnn_nhwc_factory() {
  return {
      .supports = supported,
      .make = [] { return std::make_unique<CudnnConv>(true, true); },
  };
}

cuda::Factory cudnn_unfused_factory() {
  return {
      .supports = unfused_supported,
      .make = [] { return std::make_unique<CudnnConv>(false, false); },
  };
}

}  // namespace opmeter::conv
