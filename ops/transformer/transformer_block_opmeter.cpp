// opmeter's fused transformer_block on the CPU: opmeter's LayerNorm kernel; oneDNN matmuls with
// the bias, the activation (W1) and the residual add (Wo, W2) fused as post-ops, so no separate
// pass reads a projection back; opmeter's blocked attention kernel (online softmax: the seq x seq
// scores never reach memory) on each (batch, head, block of queries), with that head's q, k and v
// gathered from the fused QKV projection into cache-resident buffers.

#include <algorithm>
#include <functional>

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
    const OnednnDescs md(s, case_.dtype);
    buf_.allocate(s, case_.dtype);
    attention_.prepare(s, case_.dtype, case_.threads);
    const std::size_t n = copies();

    // dst = src W^T + bias [then act] [+ residual], one primitive.
    auto linear = [&](const dnnl::memory::desc& src, const void* a, std::size_t w, const dnnl::memory::desc& w_md,
                      std::size_t bias, const dnnl::memory::desc& b_md, const dnnl::memory::desc& dst,
                      const PtrOf& y, Act act, const ConstPtrOf& residual) {
      add_projection(seq_, n, src, [a](std::size_t) { return a; }, w_md, [&, w](std::size_t i) { return in(i, w); },
                     b_md, [&, bias](std::size_t i) { return in(i, bias); }, dst, y, act, residual);
    };
    seq_.clear();
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
    auto matmul = [&](std::size_t step) { seq_.run_step(step, copy); };
    k.layernorm(b16, in[kX].data(), buf_.ln.data(), vec(in, kLn1Gamma), vec(in, kLn1Beta), s.rows(), s.hidden);
    matmul(0);
    attention(s);
    matmul(1);
    k.layernorm(b16, buf_.h.data(), buf_.ln.data(), vec(in, kLn2Gamma), vec(in, kLn2Beta), s.rows(), s.hidden);
    matmul(2);
    matmul(3);
  }

  std::map<std::string, std::string> details() const override {
    auto d = seq_.details();
    d["isa"] = tensor::kernels().isa;
    return d;
  }

 private:
  void attention(const Shape& s) { attention_.run(s, case_.dtype, buf_.qkv.data(), buf_.attn.data()); }

  tensor::OnednnSequence seq_;  // the four projections, run one at a time between our kernels
  BlockBuffers buf_;
  BlockedSelfAttention attention_;  // its gather buffers and workspaces, one per thread
};

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "transformer_block",
      .impl = "opmeter",
      .preference = ImplDef::own_kernel,
      .summary = "opmeter LayerNorm + fused attention kernels, oneDNN matmuls with bias, activation and residual "
                 "add as post-ops",
      .dtypes = {DType::fp32, DType::bf16},
      .make = [] { return std::make_unique<OpmeterBlock>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::transformer
