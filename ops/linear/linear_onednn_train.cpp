// oneDNN training step of the linear ops (mode=train), impl `onednn_train`: the three GEMMs are
// oneDNN matmuls, the rest our own loops.
//   forward   [LayerNorm keeping mean and rstd ->] z = xhat W^T + b (matmul, bias fused)
//             [-> y = act(z)]
//   backward  dz = dy * act'(z); dxhat = dz W (matmul); dW = dz^T xhat (matmul); db = column
//             sums of dz; [LayerNorm backward: dx, dgamma, dbeta]
// Layouts (bf16): oneDNN's AMX matmul is slow on the plain row-major W of dz W (its copy of W, and
// its reorder of W, interleave pairs of rows several times slower than a memcpy), so the
// backward packs W into the AMX layout itself, once per step, and runs dz W in column slabs
// (tensor::PackedSlabMatmul): W changes at every optimizer step, so a real step packs it too,
// and the pack is timed with the backward. The forward reads W as
// stored (x W^T is oneDNN's fast case). dW = dz^T xhat runs on transposed copies of dz and xhat
// (oneDNN reorders, timed with the backward: a real step makes them from that step's dz and x),
// which makes its operands the fast case too.
// phase=forward times the forward, phase=backward the backward from the forward's saved z and
// xhat (run once per input set at setup), the default the whole step. Every check runs the whole
// step so that each gradient is checked whatever is timed.
#include <cmath>

#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "ops/tensor/onednn_pack.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::linear {
namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using tensor::Act;

// act'(z) in fp32, as PyTorch's backward kernels compute it.
float act_grad(Act a, float x) {
  auto sigmoid = [](float v) { return 1 / (1 + std::exp(-v)); };
  switch (a) {
    case Act::none: return 1;
    case Act::relu: return x > 0 ? 1.f : 0.f;
    case Act::relu6: return x > 0 && x < 6 ? 1.f : 0.f;
    case Act::leaky_relu: return x > 0 ? 1.f : tensor::kLeakySlope;
    case Act::gelu: return 0.5f * std::erfc(-x * 0.70710678f) + x * std::exp(-0.5f * x * x) * 0.39894228f;
    case Act::gelu_tanh: {
      const float c = 0.79788456f, t = std::tanh(c * (x + 0.044715f * x * x * x));
      return 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * c * (1 + 3 * 0.044715f * x * x);
    }
    case Act::silu: return sigmoid(x) * (1 + x * (1 - sigmoid(x)));
    case Act::sigmoid: return sigmoid(x) * (1 - sigmoid(x));
    case Act::hardswish: return x < -3 ? 0.f : x > 3 ? 1.f : (2 * x + 3) / 6;
  }
  return 1;
}

// Elements of the activations' type (bf16 or fp32) read and written as fp32.
struct Elems {
  bool bf16;
  float get(const void* p, std::size_t i) const {
    return bf16 ? from_bf16(static_cast<const std::uint16_t*>(p)[i]) : static_cast<const float*>(p)[i];
  }
  void set(void* p, std::size_t i, float v) const {
    if (bf16)
      static_cast<std::uint16_t*>(p)[i] = to_bf16(v);
    else
      static_cast<float*>(p)[i] = v;
  }
};

class OnednnTrainLinear : public HostImpl<LinearOp> {
 public:
  Check verify(std::uint64_t seed) override {
    checking_ = true;
    Check c = HostImpl<LinearOp>::verify(seed);
    checking_ = false;
    if (phase_of(case_) == Phase::backward) save_forwards();  // set 0's inputs are new
    return c;
  }

  void prepare() override {
    s_ = shape_of(case_);
    l_ = train_layout(s_);
    e_ = Elems{bf16()};
    esize_ = size_of(case_.dtype);
    const std::size_t n = copies();
    if (z_.size() != n) {
      allocate(n);
      build_primitives();
    }
    if (phase_of(case_) == Phase::backward && !checking_) save_forwards();
  }

  void run(std::size_t copy) override {
    const Phase p = checking_ ? Phase::step : phase_of(case_);
    if (p != Phase::backward) forward(copy);
    if (p != Phase::forward) backward(copy);
  }

  std::map<std::string, std::string> details() const override {
    auto d = seq_.details();
    d["dx_weights"] = packed_w_ ? fmt::format("W packed by opmeter per step (BA16a64b2a), dz W in slabs of {} columns: {}",
                                              slabs_.slab(), slabs_.impl())
                                : "W as stored";
    d["dw_operands"] = transposed_dw_ ? "dz and xhat transposed per step" : "dz read transposed";
    return d;
  }

 private:
  // Buffers once per setup (their addresses are in the primitives' arguments).
  void allocate(std::size_t n) {
    z_.clear();
    xhat_.clear();
    mean_.clear();
    rstd_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      z_.emplace_back(s_.act != Act::none ? s_.rows * s_.out * esize_ : 1);
      xhat_.emplace_back(s_.layernorm ? s_.rows * s_.hidden * esize_ : 1);
      mean_.emplace_back(s_.rows * 4);
      rstd_.emplace_back(s_.rows * 4);
    }
    dz_ = Buffer(s_.act != Act::none ? s_.rows * s_.out * esize_ : 1);
    dxhat_ = Buffer(s_.layernorm ? s_.rows * s_.hidden * esize_ : 1);
    dz_t_ = Buffer(bf16() ? s_.rows * s_.out * esize_ : 1);
    x_t_ = Buffer(bf16() ? s_.rows * s_.hidden * esize_ : 1);
  }
  // Backward alone is timed from each set's saved forward.
  void save_forwards() {
    for (std::size_t i = 0; i < copies(); ++i) forward(i);
  }
  char* section(std::size_t copy, std::size_t offset) { return static_cast<char*>(out(copy)) + offset * esize_; }
  const void* gemm_input(std::size_t copy) { return s_.layernorm ? xhat_[copy].data() : in(copy, kX); }
  void* z(std::size_t copy) { return s_.act != Act::none ? z_[copy].data() : section(copy, l_.y); }
  const void* dz(std::size_t copy) { return s_.act != Act::none ? dz_.data() : in(copy, dy_index()); }
  void* dxhat(std::size_t copy) { return s_.layernorm ? dxhat_.data() : section(copy, l_.dx); }

  void build_primitives() {
    auto t = tensor::onednn_type(case_.dtype);
    const auto rows = dnnl::memory::dim(s_.rows), h = dnnl::memory::dim(s_.hidden), o = dnnl::memory::dim(s_.out);
    dnnl::memory::desc x_md({rows, h}, t, tag::ab), wt_md({h, o}, t, tag::ba), z_md({rows, o}, t, tag::ab),
        bias_md({1, o}, dt::f32, tag::ab), w_md({o, h}, t, tag::ab), dzt_md({o, rows}, t, tag::ba), dw_md({o, h}, t, tag::ab);
    auto mem = tensor::onednn_memory;
    seq_.clear();
    auto fwd = tensor::onednn_matmul(x_md, wt_md, &bias_md, z_md);
    seq_.add(dnnl::matmul(fwd), fwd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(x_md, gemm_input(i))}, {DNNL_ARG_WEIGHTS, mem(wt_md, in(i, kW))},
                                {DNNL_ARG_BIAS, mem(bias_md, in(i, kBias))}, {DNNL_ARG_DST, mem(z_md, z(i))}};
    });
    // dW = dz^T xhat: on bf16 from transposed copies (plain dz^T, and xhat^T read as xhat's
    // transpose), else reading dz transposed.
    transposed_dw_ = bf16();
    dnnl::memory::desc dzt_plain_md({o, rows}, t, tag::ab), x_t_md({rows, h}, t, tag::ba);
    auto weights = transposed_dw_ ? tensor::onednn_matmul(dzt_plain_md, x_t_md, nullptr, dw_md)
                                  : tensor::onednn_matmul(dzt_md, x_md, nullptr, dw_md);
    seq_.add(dnnl::matmul(weights), weights.impl_info_str(), copies(), [&](std::size_t i) {
      if (transposed_dw_)
        return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(dzt_plain_md, dz_t_.data())}, {DNNL_ARG_WEIGHTS, mem(x_t_md, x_t_.data())},
                                  {DNNL_ARG_DST, mem(dw_md, section(i, l_.dw))}};
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(dzt_md, dz(i))}, {DNNL_ARG_WEIGHTS, mem(x_md, gemm_input(i))},
                                {DNNL_ARG_DST, mem(dw_md, section(i, l_.dw))}};
    });
    if (transposed_dw_) {
      // Row-major (r x c) into its transpose: a reorder to the column-major layout of (r x c).
      auto transpose = [&](dnnl::memory::desc from, auto source, void* to) {
        dnnl::memory::desc to_md(from.dims(), t, tag::ba);
        auto pd = tensor::onednn_try("reorder", [&] {
          return dnnl::reorder::primitive_desc(tensor::onednn_engine(), from, tensor::onednn_engine(), to_md);
        });
        seq_.add(dnnl::reorder(pd), pd.impl_info_str(), copies(), [&](std::size_t i) {
          return tensor::OnednnArgs{{DNNL_ARG_FROM, mem(from, source(i))}, {DNNL_ARG_TO, mem(to_md, to)}};
        });
      };
      transpose(z_md, [&](std::size_t i) { return dz(i); }, dz_t_.data());
      transpose(x_md, [&](std::size_t i) { return gemm_input(i); }, x_t_.data());
    }
    // dX = dz W: on W packed by us, in slabs, where oneDNN picks the AMX layout for W and runs
    // the slabs with a kernel of its own; else on W as stored (the last step).
    auto any = tensor::onednn_matmul(z_md, dnnl::memory::desc({o, h}, t, tag::any), nullptr, x_md);
    packed_w_ = false;
    if (tensor::is_amx_bf16_packed(any.weights_desc())) {
      slabs_ = tensor::PackedSlabMatmul(s_.rows, s_.out, s_.hidden);
      packed_w_ = slabs_.fast();
    }
    if (packed_w_) {
      w_packed_ = Buffer(any.weights_desc().get_size());
      return;
    }
    auto data = tensor::onednn_matmul(z_md, w_md, nullptr, x_md);
    data_step_ = transposed_dw_ ? kTransposeX + 1 : kWeights + 1;
    seq_.add(dnnl::matmul(data), data.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(z_md, dz(i))}, {DNNL_ARG_WEIGHTS, mem(w_md, in(i, kW))},
                                {DNNL_ARG_DST, mem(x_md, dxhat(i))}};
    });
  }

  void forward(std::size_t copy) {
    if (s_.layernorm) layernorm_forward(copy);
    seq_.run_step(kForward, copy);
    if (s_.act != Act::none) tensor::kernels().act(s_.act, bf16(), z(copy), section(copy, l_.y), s_.rows * s_.out);
  }

  void backward(std::size_t copy) {
    if (s_.act != Act::none) act_backward(copy);
    if (packed_w_) {
      tensor::pack_amx_bf16(static_cast<const std::uint16_t*>(in(copy, kW)), w_packed_.as<std::uint16_t>(), s_.out, s_.hidden);
      slabs_.run(dz(copy), w_packed_.as<std::uint16_t>(), dxhat(copy));
    } else {
      seq_.run_step(data_step_, copy);
    }
    if (transposed_dw_) {
      seq_.run_step(kTransposeDz, copy);
      seq_.run_step(kTransposeX, copy);
    }
    seq_.run_step(kWeights, copy);
    bias_grad(copy);
    if (s_.layernorm) layernorm_backward(copy);
  }

  // xhat = (x - mean) rstd gamma + beta, keeping mean and rstd of each row.
  void layernorm_forward(std::size_t copy) {
    const void* x = in(copy, kX);
    const float* g = static_cast<const float*>(in(copy, kGamma));
    const float* b = static_cast<const float*>(in(copy, kBeta));
    float* mean = mean_[copy].as<float>();
    float* rstd = rstd_[copy].as<float>();
    void* xh = xhat_[copy].data();
    const std::size_t h = s_.hidden;
#pragma omp parallel for
    for (std::size_t r = 0; r < s_.rows; ++r) {
      float m = 0, v = 0;
      for (std::size_t k = 0; k < h; ++k) m += e_.get(x, r * h + k);
      m /= float(h);
      for (std::size_t k = 0; k < h; ++k) {
        float d = e_.get(x, r * h + k) - m;
        v += d * d;
      }
      mean[r] = m;
      rstd[r] = 1 / std::sqrt(v / float(h) + tensor::kNormEps);
      for (std::size_t k = 0; k < h; ++k) e_.set(xh, r * h + k, (e_.get(x, r * h + k) - m) * rstd[r] * g[k] + b[k]);
    }
  }

  // dz = dy * act'(z).
  void act_backward(std::size_t copy) {
    const void* dy = in(copy, dy_index());
    const void* zz = z(copy);
    void* d = dz_.data();
    const std::size_t n = s_.rows * s_.out;
#pragma omp parallel for
    for (std::size_t i = 0; i < n; ++i) e_.set(d, i, e_.get(dy, i) * act_grad(s_.act, e_.get(zz, i)));
  }

  // db = sum over rows of dz, each thread a block of columns.
  void bias_grad(std::size_t copy) {
    const void* d = dz(copy);
    char* db = section(copy, l_.db);
    const std::size_t o = s_.out;
    constexpr std::size_t kBlock = 256;
#pragma omp parallel for
    for (std::size_t j0 = 0; j0 < o; j0 += kBlock) {
      const std::size_t j1 = std::min(o, j0 + kBlock);
      float acc[kBlock] = {};
      for (std::size_t r = 0; r < s_.rows; ++r)
        for (std::size_t j = j0; j < j1; ++j) acc[j - j0] += e_.get(d, r * o + j);
      for (std::size_t j = j0; j < j1; ++j) e_.set(db, j, acc[j - j0]);
    }
  }

  // dx = rstd (g dxhat - mean(g dxhat) - xn mean(g dxhat xn)); dgamma, dbeta summed over rows
  // per thread, then together.
  void layernorm_backward(std::size_t copy) {
    const void* x = in(copy, kX);
    const float* g = static_cast<const float*>(in(copy, kGamma));
    const float* mean = mean_[copy].as<float>();
    const float* rstd = rstd_[copy].as<float>();
    const void* dxh = dxhat_.data();
    char* dx = section(copy, l_.dx);
    const std::size_t h = s_.hidden;
    std::vector<float> dgamma(h, 0), dbeta(h, 0);
#pragma omp parallel
    {
      std::vector<float> tg(h, 0), tb(h, 0);
#pragma omp for
      for (std::size_t r = 0; r < s_.rows; ++r) {
        float a = 0, axn = 0;
        for (std::size_t k = 0; k < h; ++k) {
          float d = e_.get(dxh, r * h + k), xn = (e_.get(x, r * h + k) - mean[r]) * rstd[r];
          a += g[k] * d;
          axn += g[k] * d * xn;
          tg[k] += d * xn;
          tb[k] += d;
        }
        a /= float(h);
        axn /= float(h);
        for (std::size_t k = 0; k < h; ++k) {
          float xn = (e_.get(x, r * h + k) - mean[r]) * rstd[r];
          e_.set(dx, r * h + k, rstd[r] * (g[k] * e_.get(dxh, r * h + k) - a - xn * axn));
        }
      }
#pragma omp critical
      for (std::size_t k = 0; k < h; ++k) {
        dgamma[k] += tg[k];
        dbeta[k] += tb[k];
      }
    }
    for (std::size_t k = 0; k < h; ++k) {
      e_.set(section(copy, l_.dgamma), k, dgamma[k]);
      e_.set(section(copy, l_.dbeta), k, dbeta[k]);
    }
  }

  // The steps of seq_, in the order they are added (the transposes on bf16 only; dz W on plain W last).
  static constexpr std::size_t kForward = 0, kWeights = 1, kTransposeDz = 2, kTransposeX = 3;
  std::size_t data_step_ = 0;  // dz W on plain W: after the others
  Shape s_{};
  TrainLayout l_;
  Elems e_{false};
  std::size_t esize_ = 4;
  bool checking_ = false;
  std::vector<Buffer> z_, xhat_, mean_, rstd_;  // the forward's saved tensors, per input set
  Buffer dz_, dxhat_;                            // the backward's intermediates
  Buffer w_packed_, dz_t_, x_t_;                 // W packed, dz and xhat transposed: once per step
  bool packed_w_ = false, transposed_dw_ = false;
  tensor::PackedSlabMatmul slabs_;
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  for (auto& op : linear_ops())
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "onednn_train",
        .summary = "training step (mode=train): oneDNN matmuls for x W^T, dz W and dz^T x; our own activation, "
                   "bias and LayerNorm backward",
        .dtypes = {DType::fp32, DType::bf16},
        .make = [] { return std::make_unique<OnednnTrainLinear>(); },
        .needs = {kMode},
        .accepts = {kPhase},
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
