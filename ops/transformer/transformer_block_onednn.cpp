// transformer_block as separate oneDNN primitives, every intermediate written to memory and read
// back (the fusion baseline): layer norm, matmul, bias add, the three-op attention (S, P in
// memory), matmul, bias add, residual add, layer norm, matmul, bias add, eltwise activation,
// matmul, bias add, residual add.
#include "ops/attention/attention_onednn_steps.hpp"
#include "ops/tensor/onednn_util.hpp"
#include "ops/transformer/block_buffers.hpp"
#include "ops/transformer/transformer_onednn.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;
using tensor::OnednnArgs;

class OnednnUnfusedBlock : public HostImpl<TransformerBlockOp> {
 public:
  void prepare() override {
    const auto s = shape_of(case_);
    const OnednnDescs md(s, case_.dtype);
    const std::size_t e = size_of(case_.dtype), r = s.rows(), h = s.hidden;
    buf_.allocate(s, case_.dtype);
    proj_ = Buffer(r * h * e);
    seq_.clear();
    auto mem = tensor::onednn_memory;
    const std::size_t n = copies();

    auto layernorm = [&](const dnnl::memory::desc& x_md, std::function<const void*(std::size_t)> x, std::size_t g,
                         std::size_t b) {
      auto pd = tensor::onednn_layernorm(x_md);
      seq_.add(dnnl::layer_normalization_forward(pd), pd.impl_info_str(), n, [&](std::size_t i) {
        return OnednnArgs{{DNNL_ARG_SRC, mem(x_md, x(i))},
                          {DNNL_ARG_DST, mem(x_md, buf_.ln.data())},
                          {DNNL_ARG_SCALE, mem(md.gamma, in(i, g))},
                          {DNNL_ARG_SHIFT, mem(md.gamma, in(i, b))}};
      });
    };
    // dst = src W^T, then dst += bias (in place).
    auto linear = [&](const dnnl::memory::desc& src, const void* a, std::size_t w, const dnnl::memory::desc& w_md,
                      std::size_t bias, const dnnl::memory::desc& b_md, const dnnl::memory::desc& dst, void* y) {
      auto mm = tensor::onednn_matmul(src, w_md, nullptr, dst);
      seq_.add(dnnl::matmul(mm), mm.impl_info_str(), n, [&](std::size_t i) {
        return OnednnArgs{{DNNL_ARG_SRC, mem(src, a)}, {DNNL_ARG_WEIGHTS, mem(w_md, in(i, w))}, {DNNL_ARG_DST, mem(dst, y)}};
      });
      auto add = tensor::onednn_add(dst, b_md, dst);
      seq_.add(dnnl::binary(add), add.impl_info_str(), n, [&](std::size_t i) {
        return OnednnArgs{{DNNL_ARG_SRC_0, mem(dst, y)}, {DNNL_ARG_SRC_1, mem(b_md, in(i, bias))}, {DNNL_ARG_DST, mem(dst, y)}};
      });
    };
    auto residual = [&](std::function<const void*(std::size_t)> a, const void* b, std::function<void*(std::size_t)> y) {
      auto add = tensor::onednn_add(md.x, md.x, md.x);
      seq_.add(dnnl::binary(add), add.impl_info_str(), n, [&](std::size_t i) {
        return OnednnArgs{{DNNL_ARG_SRC_0, mem(md.x, a(i))}, {DNNL_ARG_SRC_1, mem(md.x, b)}, {DNNL_ARG_DST, mem(md.x, y(i))}};
      });
    };

    layernorm(md.x, [&](std::size_t i) { return in(i, kX); }, kLn1Gamma, kLn1Beta);
    linear(md.x, buf_.ln.data(), kWqkv, md.wqkv, kBqkv, md.bqkv, md.qkv, buf_.qkv.data());
    char* qkv = static_cast<char*>(buf_.qkv.data());
    attention_.add(
        seq_, {md.q, md.kt, md.v, md.o}, case_.dtype, s.scale(), s.causal, attention::Stage::full, n,
        [&](std::size_t) { return qkv; }, [&](std::size_t) { return qkv + h * e; },
        [&](std::size_t) { return qkv + 2 * h * e; }, [&](std::size_t) { return buf_.attn.data(); });
    linear(md.x, buf_.attn.data(), kWo, md.wo, kBo, md.bo, md.x, proj_.data());
    residual([&](std::size_t i) { return in(i, kX); }, proj_.data(), [&](std::size_t) { return buf_.h.data(); });
    layernorm(md.x, [&](std::size_t) { return buf_.h.data(); }, kLn2Gamma, kLn2Beta);
    linear(md.x, buf_.ln.data(), kW1, md.w1, kB1, md.b1, md.x_mlp, buf_.mlp.data());
    if (s.act != Act::none) {
      auto el = tensor::onednn_eltwise(s.act, md.x_mlp);
      seq_.add(dnnl::eltwise_forward(el), el.impl_info_str(), n, [&](std::size_t) {
        return OnednnArgs{{DNNL_ARG_SRC, mem(md.x_mlp, buf_.mlp.data())}, {DNNL_ARG_DST, mem(md.x_mlp, buf_.mlp.data())}};
      });
    }
    linear(md.x_mlp, buf_.mlp.data(), kW2, md.w2, kB2, md.b2, md.x, proj_.data());
    residual([&](std::size_t) { return buf_.h.data(); }, proj_.data(), [&](std::size_t i) { return out(i); });
  }

  void run(std::size_t copy) override { seq_.run(copy); }
  std::map<std::string, std::string> details() const override { return seq_.details(); }

 private:
  // Intermediates in memory, one set shared by all copies.
  BlockBuffers buf_;
  Buffer proj_;  // a projection before its bias and residual adds
  attention::OnednnAttentionSteps attention_;
  tensor::OnednnSequence seq_;
};

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "transformer_block",
      .impl = "onednn_unfused",
      .preference = ImplDef::unfused,
      .summary = "oneDNN primitives one after another (layer norm, matmul, bias, three-op attention, residual "
                 "add, ...), every intermediate in memory (the fusion baseline)",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = tensor::onednn_supports,
      .make = [] { return std::make_unique<OnednnUnfusedBlock>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::transformer
