// conv2d: parameters, work model, BN folding and the fp64 reference.
#include "ops/conv/conv.hpp"

#include <cmath>

#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "opmeter/errors.hpp"

namespace opmeter::conv {
using tensor::Act;

Shape shape_of(const Case& c) {
  using tensor::param;
  Shape s{param(c, "batch"), param(c, "channels"), param(c, "out_channels"), param(c, "image"), param(c, "kernel"),
          param(c, "stride"), param(c, "padding"), param(c, "groups"), 0, c.get_int("bn") != 0,
          tensor::parse_act(c.get("act")).value_or(Act::none)};
  s.oh = (s.h + 2 * s.pad - s.r) / s.stride + 1;
  return s;
}

void fold_batchnorm(const float* w, const float* b, const float* mean, const float* var, const float* gamma,
                    const float* beta, std::size_t oc, std::size_t per_oc, float* w_out, float* b_out) {
  for (std::size_t o = 0; o < oc; ++o) {
    double scale = double(gamma[o]) / std::sqrt(double(var[o]) + tensor::kNormEps);
    for (std::size_t i = 0; i < per_oc; ++i) w_out[o * per_oc + i] = static_cast<float>(w[o * per_oc + i] * scale);
    b_out[o] = static_cast<float>((double(b[o]) - mean[o]) * scale + beta[o]);
  }
}

namespace {

Work fused_work(const Case& c) {
  auto s = shape_of(c);
  double e = double(size_of(c.dtype)), out = double(s.n * s.oc * s.oh * s.oh);
  Work w;
  w.flops = 2 * out * double(s.cg() * s.r * s.r) + out * (1 + activation::flops_per_element(s.act));
  w.bytes_read = double(s.n * s.c * s.h * s.h) * e + double(s.oc * s.cg() * s.r * s.r) * e + 4 * double(s.oc);
  w.bytes_written = out * e;
  return w;
}

Work unfused_work(const Case& c) {
  auto s = shape_of(c);
  Work w = fused_work(c);
  double pass = double(s.n * s.oc * s.oh * s.oh) * double(size_of(c.dtype));
  int passes = int(s.bn) + int(s.act != Act::none);  // each reads and rewrites the conv output
  w.bytes_read += passes * pass + (s.bn ? 16.0 * double(s.oc) : 0);
  w.bytes_written += passes * pass;
  return w;
}

void validate(const Case& c) {
  using tensor::check_range;
  for (auto key : {"batch", "channels", "out_channels", "image"}) check_range(c, key, 1, 1 << 16);
  check_range(c, "kernel", 1, 64);
  check_range(c, "stride", 1, 64);
  check_range(c, "padding", 0, 64);
  check_range(c, "groups", 1, 1 << 16);
  check_range(c, "bn", 0, 1);
  if (!tensor::parse_act(c.get("act"))) throw CaseError(fmt::format("conv2d act={} unknown", c.get("act")));
  auto s = shape_of(c);
  if (s.c % s.groups || s.oc % s.groups)
    throw CaseError(fmt::format("conv2d groups={} must divide channels={} and out_channels={}", s.groups, s.c, s.oc));
  if (s.h + 2 * s.pad < s.r)
    throw CaseError(fmt::format("conv2d kernel={} larger than the padded image: image={} + 2 x padding={} = {}", s.r,
                                s.h, s.pad, s.h + 2 * s.pad));
}

const bool registered = [] {
  auto op = tensor::fusable_op(
      "conv2d",
      "2-D convolution, NCHW, optional inference BatchNorm and activation after it",
      {{"batch", "16"}, {"channels", "64"}, {"out_channels", "64"}, {"image", "56"}, {"kernel", "3"},
       {"stride", "1"}, {"padding", "1"}, {"groups", "1"}, {"bn", "0"}, {"act", "none"}},
      {{"batch", "2"}, {"channels", "6"}, {"out_channels", "4"}, {"image", "9"}, {"kernel", "3"},
       {"stride", "2"}, {"padding", "1"}, {"groups", "2"}, {"bn", "1"}, {"act", "relu"}},
      fused_work, unfused_work, validate, [](const Case& c) {
        auto s = shape_of(c);
        std::string p = "conv";
        if (s.bn) p += "+bn";
        // Appended piecewise: "+" + std::string(...) trips GCC 12's false -Wrestrict.
        if (s.act != Act::none) p.append("+").append(tensor::to_string(s.act));
        return p;
      });
  // Weights, then BatchNorm's scale and shift (as the unfolded model holds them) or the bias.
  op.model_cost = [](const Case& c) {
    auto s = shape_of(c);
    double weights = double(s.oc) * double(s.cg()) * double(s.r * s.r);
    return ModelCost{weights + double(s.oc) * (s.bn ? 2 : 1), weights * double(s.n) * double(s.oh * s.oh)};
  };
  // `opmeter check`: odd channels and images, 1x1, strided, grouped, depthwise (the opmeter
  // impl's only form) with BatchNorm and without, one element. NCHW and NHWC are impls (cudnn,
  // cudnn_nhwc): each runs every shape.
  auto conv = [](int batch, int channels, int out_channels, int image, int kernel, int stride, int padding, int groups,
                 int bn, const char* act) -> Params {
    return {{"batch", std::to_string(batch)},   {"channels", std::to_string(channels)},
            {"out_channels", std::to_string(out_channels)}, {"image", std::to_string(image)},
            {"kernel", std::to_string(kernel)}, {"stride", std::to_string(stride)},
            {"padding", std::to_string(padding)}, {"groups", std::to_string(groups)},
            {"bn", std::to_string(bn)},         {"act", act}};
  };
  op.check_shapes = {conv(2, 3, 5, 11, 3, 1, 1, 1, 1, "gelu"), op.example, conv(1, 3, 5, 11, 1, 1, 0, 1, 0, "gelu"),
                     conv(2, 4, 4, 7, 3, 1, 1, 4, 1, "none"),  conv(1, 7, 7, 13, 5, 2, 2, 7, 0, "silu"),
                     conv(1, 1, 1, 1, 1, 1, 0, 1, 0, "none")};
  // An implicit GEMM per group: output pixels x output channels x (input channels x kernel
  // window), with the output size the op computes.
  op.gemm_view = [](const Case& c) -> std::optional<GemmView> {
    auto batch = integer_param(c, "batch"), ch = integer_param(c, "channels"), oc = integer_param(c, "out_channels"),
         image = integer_param(c, "image"), kernel = integer_param(c, "kernel"), stride = integer_param(c, "stride"),
         pad = integer_param(c, "padding"), groups = integer_param(c, "groups");
    if (!batch || !ch || !oc || !image || !kernel || !stride || !pad || !groups) return std::nullopt;
    if (*stride < 1 || *groups < 1 || *image + 2 * *pad < *kernel) return std::nullopt;
    const double oh = std::floor((*image + 2 * *pad - *kernel) / *stride) + 1;
    return GemmView{*batch * oh * oh, *oc / *groups, *ch / *groups * *kernel * *kernel, *groups};
  };
  Registry::global().add(op);
  tensor::register_reference<ConvOp>("conv2d", {DType::fp32, DType::bf16}, [](const Case& c) { return fused_work(c).flops; });
  return true;
}();

}  // namespace

std::vector<TensorDesc> ConvOp::inputs() const {
  auto s = shape_of(case_);
  std::vector<TensorDesc> v = {{"x", act(), s.n * s.c * s.h * s.h},
                               {"w", act(), s.oc * s.cg() * s.r * s.r},
                               {"bias", Elem::f32, s.oc}};
  if (s.bn) {
    v.push_back({"mean", Elem::f32, s.oc, -0.5, 0.5});
    v.push_back({"var", Elem::f32, s.oc, 0.25, 1.5});
    v.push_back({"gamma", Elem::f32, s.oc, 0.5, 1.5});
    v.push_back({"beta", Elem::f32, s.oc, -0.5, 0.5});
  }
  return v;
}

std::size_t ConvOp::out_rows() const {
  auto s = shape_of(case_);
  return s.n * s.oc * s.oh;
}

double ConvOp::fp32_tolerance() const {
  auto s = shape_of(case_);
  return (64 + 8 * std::sqrt(double(s.cg() * s.r * s.r))) * 0x1p-24;
}

double ConvOp::reference_row_cost() const {
  auto s = shape_of(case_);
  return 2.0 * double(s.oh * s.cg() * s.r * s.r);
}

void ConvOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  auto s = shape_of(case_);
  const std::size_t oh = row % s.oh, o = (row / s.oh) % s.oc, n = row / (s.oh * s.oc);
  const std::size_t g = o / (s.oc / s.groups);
  for (std::size_t ow = 0; ow < s.oh; ++ow) {
    double z = vec(in, kBias)[o], m = std::fabs(z);
    for (std::size_t ic = 0; ic < s.cg(); ++ic)
      for (std::size_t r = 0; r < s.r; ++r)
        for (std::size_t q = 0; q < s.r; ++q) {
          auto ih = std::int64_t(oh * s.stride + r) - std::int64_t(s.pad);
          auto iw = std::int64_t(ow * s.stride + q) - std::int64_t(s.pad);
          if (ih < 0 || iw < 0 || ih >= std::int64_t(s.h) || iw >= std::int64_t(s.h)) continue;
          std::size_t xi = ((n * s.c + g * s.cg() + ic) * s.h + std::size_t(ih)) * s.h + std::size_t(iw);
          double p = in[kX][xi] * in[kW][((o * s.cg() + ic) * s.r + r) * s.r + q];
          z += p;
          m += std::fabs(p);
        }
    if (s.bn) {
      double scale = vec(in, kGamma)[o] / std::sqrt(double(vec(in, kVar)[o]) + tensor::kNormEps);
      double shift = vec(in, kBeta)[o] - vec(in, kMean)[o] * scale;
      z = z * scale + shift;
      m = m * std::fabs(scale) + std::fabs(shift);
    }
    ref[ow] = activation::reference(s.act, z);
    // Activations change an error by at most their slope (< 1.2); sigmoid's output (0.5 at 0)
    // is also rounded at its own scale, which a small pre-activation's terms do not cover.
    mag[ow] = 1.2 * m + (s.act == Act::sigmoid ? std::fabs(ref[ow]) : 0.0) + 1e-6;
  }
}

}  // namespace opmeter::conv
