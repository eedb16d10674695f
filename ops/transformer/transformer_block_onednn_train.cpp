// Training step of transformer_block (mode=train), impl `onednn_train`: the four projections'
// GEMMs forward and backward (12) are oneDNN matmuls, or in bf16 on AMX-BF16 with sizes of
// multiples of 32 opmeter's AMX GEMM (forward: tensor::AmxProjection; backward:
// tensor::ProjectionBackward's AMX path); LayerNorm (forward keeping mean
// and rstd, backward), the activation's backward, bias gradients and residual adds are the
// training pieces linear's step shares (ops/tensor/train_kernels.hpp); attention forward is the
// blocked kernel of the inference impl, its backward five oneDNN matmuls batched over heads (bf16
// operands in a bf16 step) around our softmax recompute and dS (self_attention_backward.hpp).
//   forward   LN1 -> qkv (bias fused) -> attention o -> h = x + o Wo^T + bo (residual fused)
//             -> LN2 -> u = LN2(h) W1^T + b1 -> a = act(u) -> y = h + a W2^T + b2
//   backward  see transformer_train.hpp
// On oneDNN the projections' backward GEMMs run on the layouts it runs fastest in bf16
// (tensor::ProjectionBackward, as linear's step: W packed, dZ and A transposed per step, timed).
// Kept per input set for the backward: LN1(x), mean and rstd, qkv, o, h, LN2(h), mean and rstd, u,
// act(u); the phases as every training step runs them (ops/linear/train_phases.hpp).
#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "ops/linear/train_phases.hpp"
#include "ops/tensor/onednn_util.hpp"
#include "ops/tensor/projection_backward.hpp"
#include "ops/tensor/train_kernels.hpp"
#include "ops/transformer/block_projections.hpp"
#include "ops/transformer/blocked_self_attention.hpp"
#include "ops/transformer/self_attention_backward.hpp"
#include "ops/transformer/transformer_onednn.hpp"
#include "ops/transformer/transformer_train.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;

// The forward's tensors one input set keeps for its backward.
struct Saved {
  Buffer xhat1, mean1, rstd1, qkv, o, h, xhat2, mean2, rstd2, u, a;
};

class OnednnTrainBlock : public linear::HostTrainImpl<TransformerBlockOp> {
 public:
  void prepare() override {
    s_ = shape_of(case_);
    l_ = train_layout(s_);
    e_ = tensor::Elems{bf16()};
    if (saved_.size() != copies()) {
      allocate();
      build_primitives();
      attention_.prepare(s_, case_.dtype, case_.threads);
      attention_backward_.prepare(s_, e_, case_.threads);
    }
    save_forwards_for_backward();
  }

  std::map<std::string, std::string> details() const override {
    // Each projection's backward path (which depends on its shape), key by key.
    std::map<std::string, std::string> d;
    if (projections_.on_amx())
      d["forward"] = "opmeter's AMX GEMM on the weights as stored; bias and residual fused";
    else
      d["onednn_impl"] = projections_.onednn_details().at("onednn_impl");
    const char* names[] = {"Wqkv", "Wo", "W1", "W2"};
    for (std::size_t p = 0; p < 4; ++p)
      for (auto& [key, value] : backward_[p].details())
        d[key] += fmt::format("{}{}: {}", d[key].empty() ? "" : (key == "onednn_impl" ? " | " : "; "), names[p], value);
    return d;
  }

 private:
  enum Projection { p_qkv, p_o, p_w1, p_w2 };                       // backward_'s

  void allocate() {
    const std::size_t e = size_of(case_.dtype), r = s_.rows(), h = s_.hidden, m = s_.mlp;
    saved_.clear();
    for (std::size_t i = 0; i < copies(); ++i)
      saved_.push_back({Buffer(r * h * e), Buffer(r * 4), Buffer(r * 4), Buffer(3 * r * h * e), Buffer(r * h * e),
                        Buffer(r * h * e), Buffer(r * h * e), Buffer(r * 4), Buffer(r * 4), Buffer(r * m * e),
                        Buffer(s_.act != Act::none ? r * m * e : 1)});
    du_ = Buffer(r * m * e);
    dxhat_ = Buffer(r * h * e);
    dh_ = Buffer(r * h * e);
    do_ = Buffer(r * h * e);
    dqkv_ = Buffer(3 * r * h * e);
  }
  char* section(std::size_t copy, std::size_t offset) {
    return static_cast<char*>(out(copy)) + offset * size_of(case_.dtype);
  }
  char* grad(std::size_t copy, std::size_t input) { return section(copy, l_.grad[input]); }
  void* activated(std::size_t copy) { return s_.act != Act::none ? saved_[copy].a.data() : saved_[copy].u.data(); }

  void build_primitives() {
    const std::size_t r = s_.rows(), h = s_.hidden, m = s_.mlp;
    backward_[p_qkv].prepare(r, h, 3 * h, case_.dtype);
    backward_[p_o].prepare(r, h, h, case_.dtype);
    backward_[p_w1].prepare(r, h, m, case_.dtype);
    backward_[p_w2].prepare(r, m, h, case_.dtype);
    projections_.prepare(s_, case_.dtype, copies(), [this](BlockProjection p, std::size_t i) { return step(p, i); },
                         [this](std::size_t i, std::size_t k) { return in(i, k); });
  }

  // The forward's four projections of input set `copy` (bias and residual fused; W1's activation
  // is applied after, since its input u is kept for the backward).
  ProjectionStep step(BlockProjection p, std::size_t copy) {
    Saved& sv = saved_[copy];
    const std::size_t h = s_.hidden, m = s_.mlp;
    switch (p) {
      case proj_qkv: return {sv.xhat1.data(), h, 3 * h, kWqkv, kBqkv, sv.qkv.data(), Act::none, nullptr};
      case proj_o: return {sv.o.data(), h, h, kWo, kBo, sv.h.data(), Act::none, in(copy, kX)};
      case proj_w1: return {sv.xhat2.data(), h, m, kW1, kB1, sv.u.data(), Act::none, nullptr};
      case proj_w2: break;
    }
    return {activated(copy), m, h, kW2, kB2, out(copy), Act::none, sv.h.data()};
  }

  // A projection's dA = dZ W and dW = dZ^T A (its weights input w, their gradient's section).
  void project_back(Projection p, std::size_t copy, const void* dz, std::size_t w, void* da, const void* a) {
    backward_[p].data(dz, in(copy, w), da);
    backward_[p].weights(dz, a, grad(copy, w));
  }

  void forward(std::size_t copy) override {
    Saved& sv = saved_[copy];
    const auto& in = host_inputs(copy);
    const std::size_t r = s_.rows(), h = s_.hidden;
    tensor::layernorm_forward(e_, in[kX].data(), vec(in, kLn1Gamma), vec(in, kLn1Beta), r, h, sv.xhat1.data(),
                              sv.mean1.as<float>(), sv.rstd1.as<float>());
    projections_.run(proj_qkv, copy, in);
    attention_.run(s_, case_.dtype, sv.qkv.data(), sv.o.data());
    projections_.run(proj_o, copy, in);
    tensor::layernorm_forward(e_, sv.h.data(), vec(in, kLn2Gamma), vec(in, kLn2Beta), r, h, sv.xhat2.data(),
                              sv.mean2.as<float>(), sv.rstd2.as<float>());
    projections_.run(proj_w1, copy, in);
    if (s_.act != Act::none) tensor::kernels().act(s_.act, bf16(), sv.u.data(), sv.a.data(), r * s_.mlp);
    projections_.run(proj_w2, copy, in);
  }

  void backward(std::size_t copy) override {
    Saved& sv = saved_[copy];
    const auto& in = host_inputs(copy);
    const std::size_t r = s_.rows(), h = s_.hidden, m = s_.mlp;
    const void* dy = in[kDy].data();
    // MLP: da = dy W2 (into du), dW2, db2; du = da act'(u); dxhat2 = du W1, dW1, db1.
    project_back(p_w2, copy, dy, kW2, du_.data(), activated(copy));
    tensor::column_sums(e_, dy, r, h, grad(copy, kB2));
    if (s_.act != Act::none) tensor::act_backward(e_, s_.act, du_.data(), sv.u.data(), du_.data(), r * m);
    project_back(p_w1, copy, du_.data(), kW1, dxhat_.data(), sv.xhat2.data());
    tensor::column_sums(e_, du_.data(), r, m, grad(copy, kB1));
    // dh = dy + LN2'(dxhat2).
    tensor::layernorm_backward(e_, sv.h.data(), vec(in, kLn2Gamma), sv.mean2.as<float>(), sv.rstd2.as<float>(),
                               dxhat_.data(), dy, r, h, dh_.data(), grad(copy, kLn2Gamma), grad(copy, kLn2Beta));
    // Attention: do = dh Wo, dWo, dbo; dq dk dv; dxhat1 = dqkv Wqkv, dWqkv, dbqkv.
    project_back(p_o, copy, dh_.data(), kWo, do_.data(), sv.o.data());
    tensor::column_sums(e_, dh_.data(), r, h, grad(copy, kBo));
    attention_backward_.run(s_, sv.qkv.data(), sv.o.data(), do_.data(), dqkv_.data());
    project_back(p_qkv, copy, dqkv_.data(), kWqkv, dxhat_.data(), sv.xhat1.data());
    tensor::column_sums(e_, dqkv_.data(), r, 3 * h, grad(copy, kBqkv));
    // dx = dh + LN1'(dxhat1).
    tensor::layernorm_backward(e_, in[kX].data(), vec(in, kLn1Gamma), sv.mean1.as<float>(), sv.rstd1.as<float>(),
                               dxhat_.data(), dh_.data(), r, h, grad(copy, kX), grad(copy, kLn1Gamma),
                               grad(copy, kLn1Beta));
  }

  Shape s_{};
  TrainLayout l_;
  tensor::Elems e_{false};
  std::vector<Saved> saved_;         // per input set
  Buffer du_, dxhat_, dh_, do_, dqkv_;  // the backward's intermediates, shared
  BlockProjections projections_;     // the forward's
  tensor::ProjectionBackward backward_[4];  // Projection's order
  BlockedSelfAttention attention_;
  SelfAttentionBackward attention_backward_;
};

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "transformer_block",
      .impl = "onednn_train",
      .summary = "training step (mode=train): the projections forward and backward as oneDNN matmuls, or in bf16 on "
                 "AMX opmeter's AMX GEMM; our own LayerNorm, activation and bias backward, blocked attention forward; "
                 "attention backward as oneDNN batched matmuls",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = tensor::onednn_supports,
      .make = [] { return std::make_unique<OnednnTrainBlock>(); },
      .needs = {linear::kMode},
      .accepts = {linear::kPhase},
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::transformer
