// impl `opmeter`: opmeter's own direct convolution for depthwise convs (groups = channels =
// out_channels) in NCHW, the layout in which oneDNN has no fast depthwise kernel (it runs a
// generic one that is slowest exactly on large kernels, as RepLKNet's 31x31). Others: skipped.
// OpenMP over (image, channel) planes; each plane staged once and convolved with its outputs in
// registers (depthwise_kernel.inc), then bias and activation in one epilogue pass while the plane
// is still in cache. BatchNorm is folded into the weights and bias once, as onednn does.
#include <omp.h>

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "ops/conv/conv.hpp"
#include "ops/conv/depthwise_kernel.hpp"

namespace opmeter::conv {
namespace {

class OpmeterDepthwise : public HostImpl<ConvOp> {
 public:
  std::map<std::string, std::string> details() const override {
    return {{"kernel", fmt::format("direct depthwise ({}): outputs in registers, fp32 accumulation, BN folded, bias "
                                   "and activation fused",
                                   depthwise_kernel().isa)}};
  }

  void run(std::size_t copy) override {
    const Shape s = shape_of(case_);
    const PlaneGeometry g{s.h, s.r, s.stride, s.pad, s.oh};
    const DepthwisePlaneFn plane = depthwise_kernel().plane;
    const auto epilogue = tensor::kernels().epilogue;
    const std::size_t e = size_of(case_.dtype), in_plane = s.h * s.h * e, out_plane = s.oh * s.oh * e;
    const auto* x = static_cast<const std::byte*>(in(copy, kX));
    auto* y = static_cast<std::byte*>(out(copy));
    const std::vector<float>& w = weights_.at(copy);
    const std::vector<float>& b = biases_.at(copy);
    const auto planes = static_cast<std::int64_t>(s.n * s.c);
    const bool bf16_io = bf16();
#pragma omp parallel
    {
      // Per thread, reused across its planes.
      std::vector<float> scratch(g.scratch_floats()), acc(g.acc_floats());
#pragma omp for schedule(static)
      for (std::int64_t p = 0; p < planes; ++p) {
        const auto i = static_cast<std::size_t>(p), c = i % s.c;
        plane(g, bf16_io, x + i * in_plane, w.data() + c * s.r * s.r, b[c], scratch.data(), acc.data());
        epilogue(s.act, acc.data(), g.acc_row(), nullptr, bf16_io, y + i * out_plane, s.oh, s.oh, s.oh);
      }
    }
  }

 private:
  // fp32 weights and bias per input copy, BN folded in where the case has it.
  void prepare() override {
    const Shape s = shape_of(case_);
    const std::size_t per_c = s.r * s.r, count = s.c * per_c;
    weights_.assign(copies(), {});
    biases_.assign(copies(), {});
    for (std::size_t i = 0; i < copies(); ++i) {
      const HostTensors& in = host_inputs(i);
      std::vector<float> w(count), b(vec(in, kBias), vec(in, kBias) + s.c);
      for (std::size_t k = 0; k < count; ++k) w[k] = static_cast<float>(in[kW][k]);
      if (s.bn) {
        std::vector<float> wf(count), bf(s.c);
        fold_batchnorm(w.data(), b.data(), vec(in, kMean), vec(in, kVar), vec(in, kGamma), vec(in, kBeta), s.c, per_c,
                       wf.data(), bf.data());
        w.swap(wf);
        b.swap(bf);
      }
      weights_[i] = std::move(w);
      biases_[i] = std::move(b);
    }
  }

  std::vector<std::vector<float>> weights_, biases_;
};

Support depthwise_only(const Case& c) {
  const Shape s = shape_of(c);
  if (s.groups != s.c || s.oc != s.c)
    return Support::no(fmt::format("depthwise only (groups = channels = out_channels): groups={}, channels={}, "
                                   "out_channels={}",
                                   s.groups, s.c, s.oc));
  return Support::yes();
}

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "conv2d",
      .impl = "opmeter",
      .preference = ImplDef::own_kernel,
      .summary = "opmeter's direct depthwise convolution (groups = channels = out_channels only), NCHW: OpenMP over "
                 "planes, outputs in registers, BN folded, bias and activation fused",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = depthwise_only,
      .make = [] { return std::make_unique<OpmeterDepthwise>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::conv
