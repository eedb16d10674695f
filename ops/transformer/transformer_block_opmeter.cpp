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

#include "ops/transformer/block_buffers.hpp"
#include "ops/transformer/block_projections.hpp"
#include "ops/transformer/blocked_self_attention.hpp"
#include "ops/transformer/transformer_onednn.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;


class OpmeterBlock : public HostImpl<TransformerBlockOp> {
 public:
  void prepare() override {
    s_ = shape_of(case_);
    const Shape& s = s_;
    buf_.allocate(s, case_.dtype);
    attention_.prepare(s, case_.dtype, case_.threads);
    projections_.prepare(s, case_.dtype, copies(), [this](BlockProjection p, std::size_t i) { return step(p, i); },
                         [this](std::size_t i, std::size_t k) { return in(i, k); });
  }

  void run(std::size_t copy) override {
    const Shape& s = s_;
    const auto& k = tensor::kernels();
    const bool b16 = bf16();
    const auto& in = host_inputs(copy);
    auto matmul = [&](BlockProjection p) { projections_.run(p, copy, in); };
    k.layernorm(b16, in[kX].data(), buf_.ln.data(), vec(in, kLn1Gamma), vec(in, kLn1Beta), s.rows(), s.hidden);
    matmul(proj_qkv);
    attention_.run(s, case_.dtype, buf_.qkv.data(), buf_.attn.data());
    matmul(proj_o);
    k.layernorm(b16, buf_.h.data(), buf_.ln.data(), vec(in, kLn2Gamma), vec(in, kLn2Beta), s.rows(), s.hidden);
    matmul(proj_w1);
    matmul(proj_w2);
  }

  std::map<std::string, std::string> details() const override {
    auto d = projections_.onednn_details();
    d["isa"] = tensor::kernels().isa;
    if (projections_.on_amx()) d["projections"] = "opmeter's AMX GEMM on the weights as stored; bias, activation and residual per 32x32 block";
    return d;
  }

 private:
  // The four projections of input set `copy`: QKV, Wo + x, W1 + act, W2 + h.
  ProjectionStep step(BlockProjection p, std::size_t copy) {
    const std::size_t h = s_.hidden;
    switch (p) {
      case proj_qkv: return {buf_.ln.data(), h, 3 * h, kWqkv, kBqkv, buf_.qkv.data(), Act::none, nullptr};
      case proj_o: return {buf_.attn.data(), h, h, kWo, kBo, buf_.h.data(), Act::none, in(copy, kX)};
      case proj_w1: return {buf_.ln.data(), h, s_.mlp, kW1, kB1, buf_.mlp.data(), s_.act, nullptr};
      case proj_w2: break;
    }
    return {buf_.mlp.data(), s_.mlp, h, kW2, kB2, out(copy), Act::none, buf_.h.data()};
  }

  Shape s_{};
  BlockProjections projections_;  // the four, run one at a time between our kernels
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
