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
#include "ops/transformer/cuda/block_cuda_base.hpp"
#include "ops/transformer/transformer_quant.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;

class CudaQuantBlock : public BlockCudaBase<QuantTransformerBlockOp> {
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

  // The four weight matrices as uploaded, read back (the other inputs stay unfilled): the spec
  // quantizes the weights from the host copy.
  HostTensors host_inputs() const {
    HostTensors host;
    for (const TensorDesc& t : inputs()) host.emplace_back(t);
    for (std::size_t w : kWeights) cuda::download(host[w].data(), in(w), host[w].bytes(), stream());
    return host;
  }

  void prepare() override {
    const auto s = shape_of(case_);
    const bool first = !planned_;
    allocate_scratch();
    const auto& p = cuda::props(device()).prop;
    const auto recipe = recipe_of_case(case_);
    const auto host = host_inputs();
    for (std::size_t i = 0; i < proj_.size(); ++i) {
      proj_[i].load(recipe, quantized_weights(host, kWeights[i]), scale_elem(), s.rows(), stream());
      if (first) proj_[i].plan(s.rows(), p.multiProcessorCount);
    }
    if (!first) return;
    planned_ = true;
    plan_layernorm_and_attention(p);
  }

  void project(int i, const void* x, std::size_t bias, Act act, void* y) {
    proj_[i].launch(case_.dtype, x, static_cast<const float*>(in(bias)), act, y, stream());
  }

  void launch() override {
    const auto s = shape_of(case_);
    const auto rh = static_cast<std::int64_t>(s.rows() * s.hidden);
    // Attention half: h = x + Attn(LN1(x)).
    layernorm(in(kX), kLn1Gamma, kLn1Beta, narrow_.data());
    project(0, narrow_.data(), kBqkv, Act::none, wide_.data());
    attention_of_qkv();
    project(1, narrow_.data(), kBo, Act::none, attn_.data());
    add::launch_add(case_.dtype, in(kX), attn_.data(), h_.data(), rh, stream());
    // MLP half: y = h + W2 act(W1 LN2(h) + b1) + b2.
    layernorm(h_.data(), kLn2Gamma, kLn2Beta, narrow_.data());
    project(2, narrow_.data(), kB1, s.act, wide_.data());
    project(3, wide_.data(), kB2, Act::none, attn_.data());
    add::launch_add(case_.dtype, h_.data(), attn_.data(), out(), rh, stream());
  }

  bool planned_ = false;
  std::array<linear::quant_cuda::WeightOnlyLinear, 4> proj_;  // Wqkv, Wo, W1, W2
};

Support device_supports(const Case& c, const cuda::DeviceProps& p) {
  if (auto own = cuda::own_kernels_run_on(p, cuda::Kernels::mma); !own.ok) return own;  // flash and weight-only kernels
  const auto s = shape_of(c);
  if (auto w = linear::quant_cuda::weight_only_device_support(recipe_of_case(c), s.rows(), p); !w.ok) return w;
  return flash_block_support(s, p);
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
