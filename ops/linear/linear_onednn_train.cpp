// onednn_train: a training step (mode=train, train_linear.hpp) of linear / ln_linear_<act> on
// the CPU. Three oneDNN matmuls, with fp32 accumulation and fp32 outputs for bf16 operands:
//   forward  z  = xhat W^T + b        (rows x out)
//   dgrad    dxhat = dz W             (rows x hidden)
//   wgrad    dW = dz^T xhat           (out x hidden; dz^T through a transposed view)
// and our own OpenMP loops around them: LayerNorm forward (saving mean and 1/std), y = act(z)
// with dz = dy * act'(z) and db = sum of dz in the same pass, LayerNorm backward with dgamma /
// dbeta. bf16: xhat and dz are rounded to bf16 for the GEMMs (as a bf16 autograd stores them).
// float8 training runs on GPUs only (cublaslt_train).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <omp.h>

#include "ops/activation/activation.hpp"
#include "ops/linear/train_linear.hpp"
#include "ops/tensor/onednn_util.hpp"
#include "quant/recipe.hpp"

namespace opmeter::linear {
namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using tensor::Act;

// Activation element i of a buffer in fp32 or bf16.
inline float ld(bool bf16, const void* p, std::size_t i) {
  return bf16 ? from_bf16(static_cast<const std::uint16_t*>(p)[i]) : static_cast<const float*>(p)[i];
}
inline void st(bool bf16, void* p, std::size_t i, float v) {
  if (bf16)
    static_cast<std::uint16_t*>(p)[i] = to_bf16(v);
  else
    static_cast<float*>(p)[i] = v;
}

template <class T>
T apply_act(Act a, T x) {
  using std::erf, std::exp, std::tanh;
  switch (a) {
    case Act::none: return x;
    case Act::relu: return x > 0 ? x : T(0);
    case Act::relu6: return std::clamp(x, T(0), T(6));
    case Act::leaky_relu: return x > 0 ? x : T(tensor::kLeakySlope) * x;
    case Act::gelu: return T(0.5) * x * (1 + erf(x * T(0.7071067811865476)));
    case Act::gelu_tanh: return T(0.5) * x * (1 + tanh(T(0.7978845608028654) * (x + T(0.044715) * x * x * x)));
    case Act::silu: return x / (1 + exp(-x));
    case Act::sigmoid: return 1 / (1 + exp(-x));
    case Act::hardswish: return x * std::clamp(x + 3, T(0), T(6)) / 6;
  }
  return x;
}

class OnednnTrain : public HostImpl<TrainLinearOp> {
 public:
  void prepare() override {
    const auto s = shape_of(case_);
    const auto act_t = tensor::onednn_type(case_.dtype);
    const auto rows = dnnl::memory::dim(s.rows), h = dnnl::memory::dim(s.hidden), o = dnnl::memory::dim(s.out);
    const std::size_t e = size_of(case_.dtype);
    if (s.layernorm) {
      xhat_ = Buffer(s.rows * s.hidden * e);
      dxhat_ = Buffer(s.rows * s.hidden * 4);
      mean_.assign(s.rows, 0);
      rstd_.assign(s.rows, 0);
    }
    z_ = Buffer(s.rows * s.out * 4);
    dz_ = Buffer(s.rows * s.out * e);
    auto mem = tensor::onednn_memory;
    const TrainLayout L = train_layout(s);
    seq_.clear();
    // forward: z = xhat W^T + b (W seen as hidden x out through its transposed layout)
    dnnl::memory::desc x_md({rows, h}, act_t, tag::ab), wt_md({h, o}, act_t, tag::ba), z_md({rows, o}, dt::f32, tag::ab),
        bias_md({1, o}, dt::f32, tag::ab);
    auto fwd = tensor::onednn_matmul(x_md, wt_md, &bias_md, z_md);
    seq_.add(dnnl::matmul(fwd), fwd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(x_md, s.layernorm ? xhat_.data() : in(i, kX))},
                                {DNNL_ARG_WEIGHTS, mem(wt_md, in(i, kW))},
                                {DNNL_ARG_BIAS, mem(bias_md, in(i, kBias))},
                                {DNNL_ARG_DST, mem(z_md, z_.data())}};
    });
    // dgrad: dxhat = dz W (into dx directly without LayerNorm)
    dnnl::memory::desc dz_md({rows, o}, act_t, tag::ab), w_md({o, h}, act_t, tag::ab), dx_md({rows, h}, dt::f32, tag::ab);
    auto dgrad = tensor::onednn_matmul(dz_md, w_md, nullptr, dx_md);
    seq_.add(dnnl::matmul(dgrad), dgrad.impl_info_str(), copies(), [&](std::size_t i) {
      float* dx = static_cast<float*>(out(i)) + L.dx;
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(dz_md, dz_.data())},
                                {DNNL_ARG_WEIGHTS, mem(w_md, in(i, kW))},
                                {DNNL_ARG_DST, mem(dx_md, s.layernorm ? dxhat_.data() : dx)}};
    });
    // wgrad: dW = dz^T xhat, dz^T as an out x rows view of the rows x out buffer
    dnnl::memory::desc dzt_md({o, rows}, act_t, tag::ba), xw_md({rows, h}, act_t, tag::ab), dw_md({o, h}, dt::f32, tag::ab);
    auto wgrad = tensor::onednn_matmul(dzt_md, xw_md, nullptr, dw_md);
    seq_.add(dnnl::matmul(wgrad), wgrad.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(dzt_md, dz_.data())},
                                {DNNL_ARG_WEIGHTS, mem(xw_md, s.layernorm ? xhat_.data() : in(i, kX))},
                                {DNNL_ARG_DST, mem(dw_md, static_cast<float*>(out(i)) + L.dw)}};
    });
  }

  void run(std::size_t copy) override {
    const auto s = shape_of(case_);
    if (s.layernorm) layernorm_forward(s, copy);
    seq_.run_step(0, copy);
    act_and_bias_grad(s, copy);
    seq_.run_step(1, copy);
    seq_.run_step(2, copy);
    if (s.layernorm) layernorm_backward(s, copy);
  }

  std::map<std::string, std::string> details() const override {
    auto d = seq_.details();
    d["steps"] = "forward matmul | act, act' and db (ours) | dgrad matmul | wgrad matmul" +
                 std::string(shape_of(case_).layernorm ? " | LayerNorm forward / backward (ours)" : "");
    return d;
  }

 private:
  // xhat = (x - mean) * rstd * gamma + beta, keeping mean and rstd for the backward pass.
  void layernorm_forward(const Shape& s, std::size_t copy) {
    const bool b16 = bf16();
    const void* x = in(copy, kX);
    const float* gamma = static_cast<const float*>(in(copy, kGamma));
    const float* beta = static_cast<const float*>(in(copy, kBeta));
    const std::size_t h = s.hidden;
#pragma omp parallel for schedule(static)
    for (std::size_t r = 0; r < s.rows; ++r) {
      float sum = 0;
      for (std::size_t k = 0; k < h; ++k) sum += ld(b16, x, r * h + k);
      const float mean = sum / float(h);
      float var = 0;
      for (std::size_t k = 0; k < h; ++k) {
        float d = ld(b16, x, r * h + k) - mean;
        var += d * d;
      }
      const float rstd = 1 / std::sqrt(var / float(h) + tensor::kNormEps);
      mean_[r] = mean, rstd_[r] = rstd;
      for (std::size_t k = 0; k < h; ++k)
        st(b16, xhat_.data(), r * h + k, (ld(b16, x, r * h + k) - mean) * rstd * gamma[k] + beta[k]);
    }
  }

  // y = act(z), dz = dy * act'(z), db = column sums of dz (per-thread partial sums).
  void act_and_bias_grad(const Shape& s, std::size_t copy) {
    const bool b16 = bf16();
    const TrainLayout L = train_layout(s);
    float* o = static_cast<float*>(out(copy));
    const float* z = z_.as<float>();
    const void* dy = in(copy, dy_index());
    const std::size_t n = s.out;
    const int threads = omp_get_max_threads();
    partial_.assign(std::size_t(threads) * n, 0.0f);
#pragma omp parallel num_threads(threads)
    {
      float* db = partial_.data() + std::size_t(omp_get_thread_num()) * n;
#pragma omp for schedule(static)
      for (std::size_t r = 0; r < s.rows; ++r) {
        for (std::size_t j = 0; j < n; ++j) {
          const std::size_t i = r * n + j;
          o[L.y + i] = apply_act(s.act, z[i]);
          const float d = ld(b16, dy, i) * activation::derivative(s.act, z[i]);
          st(b16, dz_.data(), i, d);
          db[j] += d;
        }
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int t = 0; t < threads; ++t) sum += partial_[std::size_t(t) * n + j];
      o[L.db + j] = sum;
    }
  }

  // dx = rstd * (g - mean(g) - xn * mean(g xn)) with g = dxhat * gamma; dgamma = sum dxhat xn,
  // dbeta = sum dxhat over rows (per-thread partial sums).
  void layernorm_backward(const Shape& s, std::size_t copy) {
    const bool b16 = bf16();
    const TrainLayout L = train_layout(s);
    float* o = static_cast<float*>(out(copy));
    const void* x = in(copy, kX);
    const float* gamma = static_cast<const float*>(in(copy, kGamma));
    const float* dxhat = dxhat_.as<float>();
    const std::size_t h = s.hidden;
    const int threads = omp_get_max_threads();
    partial_.assign(std::size_t(threads) * 2 * h, 0.0f);
#pragma omp parallel num_threads(threads)
    {
      float* dg = partial_.data() + std::size_t(omp_get_thread_num()) * 2 * h;
      float* dbeta = dg + h;
#pragma omp for schedule(static)
      for (std::size_t r = 0; r < s.rows; ++r) {
        const float mean = mean_[r], rstd = rstd_[r];
        float a = 0, b = 0;
        for (std::size_t k = 0; k < h; ++k) {
          const float g = dxhat[r * h + k] * gamma[k], xn = (ld(b16, x, r * h + k) - mean) * rstd;
          a += g, b += g * xn;
        }
        a /= float(h), b /= float(h);
        for (std::size_t k = 0; k < h; ++k) {
          const float d = dxhat[r * h + k], xn = (ld(b16, x, r * h + k) - mean) * rstd;
          o[L.dx + r * h + k] = rstd * (d * gamma[k] - a - xn * b);
          dg[k] += d * xn;
          dbeta[k] += d;
        }
      }
    }
    for (std::size_t k = 0; k < h; ++k) {
      float g = 0, b = 0;
      for (int t = 0; t < threads; ++t) g += partial_[std::size_t(t) * 2 * h + k], b += partial_[std::size_t(t) * 2 * h + h + k];
      o[L.dgamma + k] = g, o[L.dbeta + k] = b;
    }
  }

  Buffer xhat_, dxhat_, z_, dz_;
  std::vector<float> mean_, rstd_, partial_;
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  std::vector<std::string> ops = {"linear"};
  for (Act a : tensor::all_acts()) ops.push_back("ln_linear_" + std::string(tensor::to_string(a)));
  for (auto& op : ops) {
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "onednn_train",
        .summary = "training step (mode=train): oneDNN matmuls for forward, dgrad and wgrad; our act', bias, "
                   "LayerNorm backward loops",
        .dtypes = {DType::fp32, DType::bf16},
        .supports =
            [](const Case& c) {
              if (recipe_of(c) != quant::kBaseline)
                return Support::no(fmt::format("{}={}: float8 training runs on GPUs (impl cublaslt_train)", kQuant, recipe_of(c)));
              return Support::yes();
            },
        .make = [] { return std::make_unique<OnednnTrain>(); },
        .needs = {kMode},
        .accepts = {kQuant},
    });
  }
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
