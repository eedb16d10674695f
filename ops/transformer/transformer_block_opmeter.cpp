// opmeter's fused transformer_block on the CPU: opmeter's LayerNorm kernel; the four projections
// with the bias, the activation (W1) and the residual add (Wo, W2) fused, so no separate pass reads
// a projection back: oneDNN matmuls with post-ops, or in bf16 on AMX-BF16 with every size a
// multiple of 32, opmeter's AMX GEMM (ops/tensor/amx_gemm.hpp) on the weights as stored, its
// epilogue adding bias, activation and residual per 32 x 32 block; opmeter's blocked attention
// kernel (online softmax: the seq x seq scores never reach memory) on each (batch, head, block of
// queries), with that head's q, k and v gathered from the fused QKV projection into cache-resident
// buffers.

#include <algorithm>
#include <functional>

#include "ops/tensor/amx_projection.hpp"

#include "ops/transformer/block_buffers.hpp"
#include "ops/transformer/blocked_self_attention.hpp"
#include "ops/transformer/transformer_onednn.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;


class OpmeterBlock : public HostImpl<TransformerBlockOp> {
 public:
  void prepare() override {
    const auto s = shape_of(case_);
    buf_.allocate(s, case_.dtype);
    attention_.prepare(s, case_.dtype, case_.threads);
    seq_.clear();
    use_amx_ = bf16() && tensor::AmxProjection::fits(s.rows(), s.hidden, s.mlp);
    if (use_amx_) return amx_.prepare(s.rows(), std::max(s.hidden, s.mlp), s.hidden * std::max(3 * s.hidden, s.mlp));
    const OnednnDescs md(s, case_.dtype);
    const std::size_t n = copies();

    // dst = src W^T + bias [then act] [+ residual], one primitive.
    auto linear = [&](const dnnl::memory::desc& src, const void* a, std::size_t w, const dnnl::memory::desc& w_md,
                      std::size_t bias, const dnnl::memory::desc& b_md, const dnnl::memory::desc& dst,
                      const PtrOf& y, Act act, const ConstPtrOf& residual) {
      add_projection(seq_, n, src, [a](std::size_t) { return a; }, w_md, [&, w](std::size_t i) { return in(i, w); },
                     b_md, [&, bias](std::size_t i) { return in(i, bias); }, dst, y, act, residual);
    };
    linear(md.x, buf_.ln.data(), kWqkv, md.wqkv, kBqkv, md.bqkv, md.qkv, [&](std::size_t) { return buf_.qkv.data(); },
           Act::none, nullptr);
    linear(md.x, buf_.attn.data(), kWo, md.wo, kBo, md.bo, md.x, [&](std::size_t) { return buf_.h.data(); }, Act::none,
           [&](std::size_t i) { return in(i, kX); });
    linear(md.x, buf_.ln.data(), kW1, md.w1, kB1, md.b1, md.x_mlp, [&](std::size_t) { return buf_.mlp.data(); }, s.act,
           nullptr);
    linear(md.x_mlp, buf_.mlp.data(), kW2, md.w2, kB2, md.b2, md.x, [&](std::size_t i) { return out(i); }, Act::none,
           [&](std::size_t) { return static_cast<const void*>(buf_.h.data()); });
  }

  void run(std::size_t copy) override {
    const auto s = shape_of(case_);
    const auto& k = tensor::kernels();
    const bool b16 = bf16();
    const auto& in = host_inputs(copy);
    auto matmul = [&](std::size_t step) { use_amx_ ? amx_projection(step, copy) : seq_.run_step(step, copy); };
    k.layernorm(b16, in[kX].data(), buf_.ln.data(), vec(in, kLn1Gamma), vec(in, kLn1Beta), s.rows(), s.hidden);
    matmul(0);
    attention_.run(s, case_.dtype, buf_.qkv.data(), buf_.attn.data());
    matmul(1);
    k.layernorm(b16, buf_.h.data(), buf_.ln.data(), vec(in, kLn2Gamma), vec(in, kLn2Beta), s.rows(), s.hidden);
    matmul(2);
    matmul(3);
  }

  std::map<std::string, std::string> details() const override {
    auto d = seq_.details();
    d["isa"] = tensor::kernels().isa;
    if (use_amx_) d["projections"] = "opmeter's AMX GEMM on the weights as stored; bias, activation and residual per 32x32 block";
    return d;
  }

 private:
  // Projection `step` (0 QKV, 1 Wo + x, 2 W1 + act, 3 W2 + h) on the AMX GEMM: y = act(a W^T + b) [+ r].
  void amx_projection(std::size_t step, std::size_t copy) {
    const auto s = shape_of(case_);
    const auto& in = host_inputs(copy);
    const std::size_t h = s.hidden;
    switch (step) {
      case 0: return amx_.run(buf_.ln.data(), in[kWqkv].data(), vec(in, kBqkv), buf_.qkv.data(), h, 3 * h);
      case 1: return amx_.run(buf_.attn.data(), in[kWo].data(), vec(in, kBo), buf_.h.data(), h, h, Act::none, in[kX].data());
      case 2: return amx_.run(buf_.ln.data(), in[kW1].data(), vec(in, kB1), buf_.mlp.data(), h, s.mlp, s.act);
      default: return amx_.run(buf_.mlp.data(), in[kW2].data(), vec(in, kB2), out(copy), s.mlp, h, Act::none, buf_.h.data());
    }
  }

  tensor::OnednnSequence seq_;  // the four projections, run one at a time between our kernels
  bool use_amx_ = false;         // bf16 on AMX with sizes of multiples of 32: the projections on opmeter's AMX GEMM
  tensor::AmxProjection amx_;
  BlockBuffers buf_;
  BlockedSelfAttention attention_;  // its gather buffers and workspaces, one per thread
};

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "transformer_block",
      .impl = "opmeter",
      .preference = ImplDef::own_kernel,
      .summary = "opmeter LayerNorm + fused attention kernels; projections with bias, activation and residual add "
                 "fused: oneDNN post-ops, or in bf16 on AMX opmeter's AMX GEMM",
      .dtypes = {DType::fp32, DType::bf16},
      .make = [] { return std::make_unique<OpmeterBlock>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::transformer
