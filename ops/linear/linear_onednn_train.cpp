// oneDNN training step of the linear ops (mode=train), impl `onednn_train`: the three GEMMs are
// oneDNN matmuls, the rest the training pieces it shares with transformer_block's step
// (ops/tensor/train_kernels.hpp).
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
// The phases (forward, backward from the forward's saved z and xhat, the whole step) as every
// training step runs them (train_phases.hpp).
#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "ops/linear/train_phases.hpp"
#include "ops/tensor/onednn_pack.hpp"
#include "ops/tensor/onednn_util.hpp"
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
  char* section(std::size_t copy, std::size_t offset) { return static_cast<char*>(out(copy)) + offset * esize_; }
  const void* gemm_input(std::size_t copy) { return s_.layernorm ? xhat_[copy].data() : in(copy, kX); }
  void* z(std::size_t copy) { return s_.act != Act::none ? z_[copy].data() : section(copy, l_.y); }
  const void* dz(std::size_t copy) { return s_.act != Act::none ? dz_.data() : in(copy, dy_index()); }
  void* dxhat(std::size_t copy) { return s_.layernorm ? dxhat_.data() : section(copy, l_.dx); }

  void build_primitives() {
    const tensor::TrainGemmDescs d(s_.rows, s_.hidden, s_.out, case_.dtype);
    const auto &x_md = d.a, &wt_md = d.wt, &z_md = d.z, &bias_md = d.bias, &w_md = d.w, &dzt_md = d.dzt, &dw_md = d.dw;
    using tag = dnnl::memory::format_tag;
    const auto t = tensor::onednn_type(case_.dtype);
    const auto rows = dnnl::memory::dim(s_.rows), h = dnnl::memory::dim(s_.hidden), o = dnnl::memory::dim(s_.out);
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

  void forward(std::size_t copy) override {
    if (s_.layernorm) layernorm_forward(copy);
    seq_.run_step(kForward, copy);
    if (s_.act != Act::none) tensor::kernels().act(s_.act, bf16(), z(copy), section(copy, l_.y), s_.rows * s_.out);
  }

  void backward(std::size_t copy) override {
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

  // The steps of seq_, in the order they are added (the transposes on bf16 only; dz W on plain W last).
  static constexpr std::size_t kForward = 0, kWeights = 1, kTransposeDz = 2, kTransposeX = 3;
  std::size_t data_step_ = 0;  // dz W on plain W: after the others
  Shape s_{};
  TrainLayout l_;
  Elems e_{false};
  std::size_t esize_ = 4;
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
