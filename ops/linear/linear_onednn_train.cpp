// Training step of the linear ops (mode=train), impl `onednn_train`: the three GEMMs are oneDNN
// matmuls, or in bf16 on AMX-BF16 with sizes of multiples of 32 opmeter's AMX GEMM; the rest the
// training pieces it shares with transformer_block's step (ops/tensor/train_kernels.hpp).
//   forward   [LayerNorm keeping mean and rstd ->] z = xhat W^T + b (bias fused)
//             [-> y = act(z)]
//   backward  dz = dy * act'(z); dxhat = dz W; dW = dz^T xhat; db = column sums of dz;
//             [LayerNorm backward: dx, dgamma, dbeta]
// The forward reads W as stored (x W^T: oneDNN's fast case, and the AMX GEMM's n x k B); the
// backward's two GEMMs are tensor::ProjectionBackward's (shared with transformer_block's step):
// on oneDNN, W packed and dz, xhat transposed per step, timed with the backward.
// The phases (forward, backward from the forward's saved z and xhat, the whole step) as every
// training step runs them (train_phases.hpp).
#include "ops/linear/linear.hpp"
#include "ops/linear/train_phases.hpp"
#include "ops/tensor/amx_projection.hpp"
#include "ops/tensor/onednn_util.hpp"
#include "ops/tensor/projection_backward.hpp"
#include "ops/tensor/train_kernels.hpp"

namespace opmeter::linear {
namespace {
using tensor::Act;

using tensor::Elems;

class OnednnTrainLinear : public HostTrainImpl<LinearOp> {
 public:
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
    save_forwards_for_backward();
  }

  std::map<std::string, std::string> details() const override {
    auto d = backward_.details();
    if (use_amx_)
      d["forward"] = "opmeter's AMX GEMM on W as stored, bias fused";
    else
      d["onednn_impl"] = seq_.details().at("onednn_impl") + " | " + d["onednn_impl"];
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
  }
  char* section(std::size_t copy, std::size_t offset) { return static_cast<char*>(out(copy)) + offset * esize_; }
  const void* gemm_input(std::size_t copy) { return s_.layernorm ? xhat_[copy].data() : in(copy, kX); }
  void* z(std::size_t copy) { return s_.act != Act::none ? z_[copy].data() : section(copy, l_.y); }
  const void* dz(std::size_t copy) { return s_.act != Act::none ? dz_.data() : in(copy, dy_index()); }
  void* dxhat(std::size_t copy) { return s_.layernorm ? dxhat_.data() : section(copy, l_.dx); }

  void build_primitives() {
    const tensor::TrainGemmDescs d(s_.rows, s_.hidden, s_.out, case_.dtype);
    auto mem = tensor::onednn_memory;
    seq_.clear();
    backward_.prepare(s_.rows, s_.hidden, s_.out, case_.dtype);
    use_amx_ = bf16() && tensor::AmxProjection::fits(s_.rows, s_.hidden, s_.out);
    if (use_amx_) return amx_.prepare(s_.rows, {s_.hidden}, s_.hidden * s_.out);
    auto fwd = tensor::onednn_matmul(d.a, d.wt, &d.bias, d.z);
    seq_.add(dnnl::matmul(fwd), fwd.impl_info_str(), copies(), [&](std::size_t i) {
      return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(d.a, gemm_input(i))}, {DNNL_ARG_WEIGHTS, mem(d.wt, in(i, kW))},
                                {DNNL_ARG_BIAS, mem(d.bias, in(i, kBias))}, {DNNL_ARG_DST, mem(d.z, z(i))}};
    });
  }

  void forward(std::size_t copy) override {
    if (s_.layernorm) layernorm_forward(copy);
    if (use_amx_)
      amx_.run(gemm_input(copy), in(copy, kW), vec(host_inputs(copy), kBias), z(copy), s_.hidden, s_.out);
    else
      seq_.run_step(kForward, copy);
    if (s_.act != Act::none) tensor::kernels().act(s_.act, bf16(), z(copy), section(copy, l_.y), s_.rows * s_.out);
  }

  void backward(std::size_t copy) override {
    if (s_.act != Act::none) act_backward(copy);
    backward_.data(dz(copy), in(copy, kW), dxhat(copy));
    backward_.weights(dz(copy), gemm_input(copy), section(copy, l_.dw));
    bias_grad(copy);
    if (s_.layernorm) layernorm_backward(copy);
  }

  void layernorm_forward(std::size_t copy) {
    tensor::layernorm_forward(e_, in(copy, kX), vec(host_inputs(copy), kGamma), vec(host_inputs(copy), kBeta), s_.rows,
                              s_.hidden, xhat_[copy].data(), mean_[copy].as<float>(), rstd_[copy].as<float>());
  }
  void act_backward(std::size_t copy) {
    tensor::act_backward(e_, s_.act, in(copy, dy_index()), z(copy), dz_.data(), s_.rows * s_.out);
  }
  void bias_grad(std::size_t copy) { tensor::column_sums(e_, dz(copy), s_.rows, s_.out, section(copy, l_.db)); }
  void layernorm_backward(std::size_t copy) {
    tensor::layernorm_backward(e_, in(copy, kX), vec(host_inputs(copy), kGamma), mean_[copy].as<float>(),
                               rstd_[copy].as<float>(), dxhat_.data(), nullptr, s_.rows, s_.hidden,
                               section(copy, l_.dx), section(copy, l_.dgamma), section(copy, l_.dbeta));
  }

  static constexpr std::size_t kForward = 0;  // seq_'s one step
  Shape s_{};
  TrainLayout l_;
  Elems e_{false};
  std::size_t esize_ = 4;
  std::vector<Buffer> z_, xhat_, mean_, rstd_;  // the forward's saved tensors, per input set
  Buffer dz_, dxhat_;                            // the backward's intermediates
  tensor::OnednnSequence seq_;                   // the forward's matmul (oneDNN)
  bool use_amx_ = false;                         // bf16 on AMX, sizes of multiples of 32: the forward's GEMM on amx_
  tensor::AmxProjection amx_;
  tensor::ProjectionBackward backward_;          // dX = dz W, dW = dz^T xhat
};

const bool registered = [] {
  for (auto& op : linear_ops())
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "onednn_train",
        .summary = "training step (mode=train): x W^T, dz W and dz^T x as oneDNN matmuls, or in bf16 on AMX "
                   "opmeter's AMX GEMM; our own activation, bias and LayerNorm backward",
        .dtypes = {DType::fp32, DType::bf16},
        .supports = tensor::onednn_supports,
        .make = [] { return std::make_unique<OnednnTrainLinear>(); },
        .needs = {kMode},
        .accepts = {kPhase},
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
