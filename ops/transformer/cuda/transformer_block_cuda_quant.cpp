// impl `cuda_quant` of transformer_block: impl `cuda`'s composition with its four projections
// (Wqkv, Wo, W1, W2) through the weight-only kernel of the quantized linear (quant_cuda::
// WeightOnlyLinear: codes decoded in registers inside an mma.sync GEMM, bias and activation in
// its epilogue or in the split-K reduce):
//   LN1 -> QKV (quant) -> head split -> flash attention -> head merge -> Wo (quant) -> h = x + that
//   -> LN2 -> W1 + act (quant) -> W2 (quant) -> y = h + that.
// The weights are quantized on the host by the spec (QuantTransformerBlockOp: the same codes the
// CPU impl opmeter_quant runs and the check's fp64 gate multiplies by), packed and uploaded in
// prepare(), again before each check; the check reports the SQNR of the update y - x as the CPU impl does.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>

#include "ops/add/cuda/add_kernel.hpp"
#include "ops/attention/cuda/flash_attention.hpp"
#include "ops/linear/cuda/quant_weight_only_linear.hpp"
#include "ops/norm/cuda/norm_kernels.hpp"
#include "ops/transformer/cuda/head_layout.hpp"
#include "ops/transformer/transformer_quant.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;

class CudaQuantBlock : public cuda::DeviceImpl<QuantTransformerBlockOp> {
 public:
  std::map<std::string, std::string> details() const override {
    std::map<std::string, std::string> d{
        {"passes", "layernorm, QKV weight-only GEMM+bias, head split, flash attention, head merge, Wo weight-only "
                   "GEMM+bias, add, layernorm, W1 weight-only GEMM+bias+activation, W2 weight-only GEMM+bias, add"},
        {"layernorm", ln_plan_.shape}};
    for (std::size_t i = 0; i < proj_.size(); ++i) d[std::string(kNames[i]) + "_kernel"] = proj_[i].kernel();
    return d;
  }

  std::map<std::string, Metric> metrics() const override {
    double bytes = 0;
    for (auto& p : proj_) bytes += double(p.weight_bytes());
    return {{"weight_bytes", Metric{bytes, "B", Better::lower, MetricFormat::bytes}}};
  }

 private:
  static constexpr std::array<const char*, 4> kNames = {"qkv", "wo", "w1", "w2"};

  std::size_t elem() const { return size_of(case_.dtype); }

  void allocate() {
    const auto s = shape_of(case_);
    const std::size_t rh = s.rows() * s.hidden * elem();
    auto sized = [](cuda::DeviceBuffer& b, std::size_t bytes) {
      if (b.bytes() != bytes) b = cuda::DeviceBuffer(bytes);
    };
    sized(narrow_, rh);
    sized(wide_, s.rows() * std::max(3 * s.hidden, s.mlp) * elem());
    sized(heads_, 3 * rh);
    sized(attn_, rh);
    sized(h_, rh);
  }

  void* heads(int part) const {
    const auto s = shape_of(case_);
    return static_cast<char*>(heads_.data()) + std::size_t(part) * s.rows() * s.hidden * elem();
  }

  // The inputs as uploaded, read back: the spec quantizes the weights from the host copy.
  HostTensors host_inputs() const {
    HostTensors host;
    for (const TensorDesc& t : inputs()) {
      host.emplace_back(t);
      cuda::download(host.back().data(), in(host.size() - 1), t.bytes(), stream());
    }
    return host;
  }

  void prepare() override {
    const auto s = shape_of(case_);
    const bool first = !planned_;
    allocate();
    const auto& p = cuda::props(device()).prop;
    const auto recipe = recipe_of_case(case_);
    const auto host = host_inputs();
    for (std::size_t i = 0; i < proj_.size(); ++i) {
      proj_[i].load(recipe, quantized_weights(host, kWeights[i]), scale_elem(), stream());
      if (first) proj_[i].plan(s.rows(), p.multiProcessorCount);
    }
    if (!first) return;
    planned_ = true;
    ln_plan_ = norm::plan_rows(norm::RowOp::layernorm, case_.dtype, static_cast<std::int64_t>(s.rows()),
                               static_cast<int>(s.hidden), {p.multiProcessorCount, p.sharedMemPerBlockOptin});
    attention::flash_prepare(case_.dtype, static_cast<int>(s.head_dim()));
  }

  void layernorm(const void* x, std::size_t gamma, std::size_t beta, void* y) {
    const auto s = shape_of(case_);
    norm::launch_rows(ln_plan_,
                      {.x = x,
                       .y = y,
                       .gamma = static_cast<const float*>(in(gamma)),
                       .beta = static_cast<const float*>(in(beta)),
                       .rows = static_cast<std::int64_t>(s.rows()),
                       .hidden = static_cast<int>(s.hidden)},
                      stream());
  }

  void project(int i, const void* x, std::size_t bias, Act act, void* y) {
    proj_[i].launch(case_.dtype, x, static_cast<const float*>(in(bias)), act, y, stream());
  }

  void launch() override {
    const auto s = shape_of(case_);
    const auto rh = static_cast<std::int64_t>(s.rows() * s.hidden);
    const HeadLayout layout{.batch = static_cast<std::int64_t>(s.batch),
                            .seq = static_cast<int>(s.seq),
                            .heads = static_cast<int>(s.heads),
                            .head_dim = static_cast<int>(s.head_dim())};
    // Attention half: h = x + Attn(LN1(x)).
    layernorm(in(kX), kLn1Gamma, kLn1Beta, narrow_.data());
    project(0, narrow_.data(), kBqkv, Act::none, wide_.data());
    launch_split_qkv(layout, wide_.data(), heads(0), heads(1), heads(2), stream());
    attention::launch_flash_attention(case_.dtype,
                                      {.q = heads(0),
                                       .k = heads(1),
                                       .v = heads(2),
                                       .o = attn_.data(),
                                       .heads_total = layout.batch * layout.heads,
                                       .seq = layout.seq,
                                       .head_dim = layout.head_dim,
                                       .causal = s.causal,
                                       .scale = s.scale()},
                                      stream());
    launch_merge_heads(layout, attn_.data(), narrow_.data(), stream());
    project(1, narrow_.data(), kBo, Act::none, attn_.data());
    add::launch_add(case_.dtype, in(kX), attn_.data(), h_.data(), rh, stream());
    // MLP half: y = h + W2 act(W1 LN2(h) + b1) + b2.
    layernorm(h_.data(), kLn2Gamma, kLn2Beta, narrow_.data());
    project(2, narrow_.data(), kB1, s.act, wide_.data());
    project(3, wide_.data(), kB2, Act::none, attn_.data());
    add::launch_add(case_.dtype, h_.data(), attn_.data(), out(), rh, stream());
  }

  bool planned_ = false;
  norm::RowPlan ln_plan_;
  std::array<linear::quant_cuda::WeightOnlyLinear, 4> proj_;  // Wqkv, Wo, W1, W2
  // narrow_: LN1 out, then the merged heads, then LN2 out; wide_: QKV, then the MLP's hidden
  // layer; heads_: q, k, v in the flash kernel's layout; attn_: its output, then each projection's
  // output before a residual add; h_: the attention half's result.
  cuda::DeviceBuffer narrow_, wide_, heads_, attn_, h_;
};

Support device_supports(const Case& c, const cuda::DeviceProps& p) {
  if (auto own = cuda::own_kernels_run_on(p, cuda::Kernels::mma); !own.ok) return own;  // flash and weight-only kernels
  const auto s = shape_of(c);
  if (auto w = linear::quant_cuda::weight_only_device_support(recipe_of_case(c), s.rows(), p); !w.ok) return w;
  const int d = static_cast<int>(s.head_dim());
  if (!attention::flash_head_dim_built(d)) return Support::no(fmt::format("no flash kernel for head_dim {}", d));
  const std::size_t need = attention::flash_shared_bytes(d);
  if (static_cast<std::size_t>(p.prop.sharedMemPerBlockOptin) < need)
    return Support::no(fmt::format("the flash kernel needs {} bytes of shared memory per block; {} allows {}", need,
                                   p.prop.name, p.prop.sharedMemPerBlockOptin));
  if (double(s.batch) * double(s.heads) > double(INT_MAX)) return Support::no("batch * heads above 2^31 - 1 blocks");
  return Support::yes();
}

}  // namespace

// The plugin's half of this impl, named by its declaration in transformer_block_cuda_impls.cpp.
cuda::Factory cuda_quant_factory() {
  return {
      .supports = device_supports,
      .make = [] { return std::make_unique<CudaQuantBlock>(); },
  };
}

}  // namespace opmeter::transformer
