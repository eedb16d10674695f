// impl `cuda` of transformer_block: the block composed of opmeter's CUDA pieces, each called
// through its own launch interface, intermediates in device scratch buffers (the case's memory):
//   LN1 (norm_kernels)  ->  QKV = LN1 Wqkv^T + bqkv (LtMatmul, bias epilogue)  ->  split into
//   heads (head_layout.cu)  ->  flash attention  ->  merge heads into rows  ->  O Wo^T + bo
//   (LtMatmul)  ->  h = x + that (add kernel)  ->  LN2  ->  W1 + b1 (LtMatmul; relu / gelu_tanh in
//   its epilogue, other acts by the activation pass)  ->  W2 + b2 (LtMatmul)  ->  y = h + that.
// cuBLASLt's bias has D's type, so the fp32 biases are rounded to the case's dtype in prepare().
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>

#include "ops/add/cuda/add_kernel.hpp"
#include "ops/attention/cuda/flash_attention.hpp"
#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"
#include "ops/linear/cuda/bias_act_kernel.hpp"
#include "ops/norm/cuda/norm_kernels.hpp"
#include "ops/transformer/cuda/block_cuda_base.hpp"
#include "ops/transformer/transformer_block.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::transformer {
namespace {
using tensor::Act;

// The activations cuBLASLt applies in the bias epilogue exactly as the spec means them (its GELU
// is the tanh form, so act=gelu, the erf form, takes the separate pass).
cublasLtEpilogue_t w1_epilogue(Act a) {
  switch (a) {
    case Act::relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Act::gelu_tanh: return CUBLASLT_EPILOGUE_GELU_BIAS;
    default: return CUBLASLT_EPILOGUE_BIAS;
  }
}
bool act_in_epilogue(Act a) { return a == Act::relu || a == Act::gelu_tanh; }

class CudaTransformerBlock : public BlockCudaBase<TransformerBlockOp> {
 public:
  std::map<std::string, std::string> details() const override {
    const auto s = shape_of(case_);
    const auto act = std::string(tensor::to_string(s.act));
    std::map<std::string, std::string> d{
        {"passes", fmt::format("layernorm, QKV GEMM+bias, head split, flash attention, head merge, Wo GEMM+bias, add, "
                               "layernorm, W1 GEMM+bias{}, W2 GEMM+bias, add",
                               s.act == Act::none       ? ""
                               : act_in_epilogue(s.act) ? "+" + act + " (epilogue)"
                                                        : ", " + act + " kernel")},
        {"layernorm", ln_plan_.shape},
        {"biases", fmt::format("rounded to {} once (cuBLASLt's bias has D's type)", to_string(case_.dtype))}};
    for (std::size_t i = 0; i < gemms_.size(); ++i)
      if (gemms_[i].planned())
        for (auto& [key, value] : gemms_[i].details()) d[std::string(kGemmNames[i]) + "_" + key] = value;
    return d;
  }

 private:
  static constexpr std::array<const char*, 4> kGemmNames = {"qkv", "wo", "w1", "w2"};
  enum { kQkv = 0, kO = 1, kW1g = 2, kW2g = 3 };

  void allocate() {
    const auto s = shape_of(case_);
    allocate_scratch();
    sized(bqkv_, 3 * s.hidden * elem());
    sized(bo_, s.hidden * elem());
    sized(b1_, s.mlp * elem());
    sized(b2_, s.hidden * elem());
  }

  void convert_bias(std::size_t input, const cuda::DeviceBuffer& dst, std::size_t n) {
    linear::launch_bias_convert(case_.dtype, static_cast<const float*>(in(input)), dst.data(),
                                static_cast<std::int64_t>(n), stream());
    cuda::check(cudaGetLastError(), "bias conversion kernel");
  }

  void prepare() override {
    const auto s = shape_of(case_);
    const bool first = !gemms_[kQkv].planned();
    allocate();
    // Fresh inputs come before each check: biases converted again, the plans kept (the buffers
    // stay where they are), so the check runs the algorithms that were timed.
    convert_bias(kBqkv, bqkv_, 3 * s.hidden);
    convert_bias(kBo, bo_, s.hidden);
    convert_bias(kB1, b1_, s.mlp);
    convert_bias(kB2, b2_, s.hidden);
    if (!first) return;
    plan_layernorm_and_attention(cuda::props(device()).prop);
    // The plans time candidates on these buffers: zeros, not whatever the allocator left.
    for (auto* b : {&narrow_, &wide_, &heads_, &attn_, &h_}) cuda::fill(b->data(), 0, b->bytes(), stream());
    auto plan = [&](int i, std::uint64_t n, std::uint64_t k, cublasLtEpilogue_t epi, const void* bias, const void* a,
                    const void* w, void* d) {
      gemms_[i].plan({.dtype = case_.dtype, .M = s.rows(), .N = n, .K = k, .epilogue = epi, .bias = bias}, a, w, d,
                     stream());
    };
    plan(kQkv, 3 * s.hidden, s.hidden, CUBLASLT_EPILOGUE_BIAS, bqkv_.data(), narrow_.data(), in(kWqkv), wide_.data());
    plan(kO, s.hidden, s.hidden, CUBLASLT_EPILOGUE_BIAS, bo_.data(), narrow_.data(), in(kWo), attn_.data());
    plan(kW1g, s.mlp, s.hidden, w1_epilogue(s.act), b1_.data(), narrow_.data(), in(kW1), wide_.data());
    plan(kW2g, s.hidden, s.mlp, CUBLASLT_EPILOGUE_BIAS, b2_.data(), wide_.data(), in(kW2), attn_.data());
  }

  void launch() override {
    const auto s = shape_of(case_);
    const auto rh = static_cast<std::int64_t>(s.rows() * s.hidden);
    // Attention half: h = x + Attn(LN1(x)).
    layernorm(in(kX), kLn1Gamma, kLn1Beta, narrow_.data());
    gemms_[kQkv].run(narrow_.data(), in(kWqkv), wide_.data(), stream());
    attention_of_qkv();
    gemms_[kO].run(narrow_.data(), in(kWo), attn_.data(), stream());
    add::launch_add(case_.dtype, in(kX), attn_.data(), h_.data(), rh, stream());
    // MLP half: y = h + W2 act(W1 LN2(h) + b1) + b2.
    layernorm(h_.data(), kLn2Gamma, kLn2Beta, narrow_.data());
    gemms_[kW1g].run(narrow_.data(), in(kW1), wide_.data(), stream());
    if (!act_in_epilogue(s.act))
      linear::launch_activation(case_.dtype, s.act, wide_.data(), static_cast<std::int64_t>(s.rows() * s.mlp),
                                stream());
    gemms_[kW2g].run(wide_.data(), in(kW2), attn_.data(), stream());
    add::launch_add(case_.dtype, h_.data(), attn_.data(), out(), rh, stream());
  }

  std::array<gemm::LtMatmul, 4> gemms_;
  cuda::DeviceBuffer bqkv_, bo_, b1_, b2_;  // biases in the case's dtype
};

Support device_supports(const Case& c, const cuda::DeviceProps& p) {
  if (auto own = cuda::own_kernels_run_on(p, cuda::Kernels::mma); !own.ok) return own;  // the flash kernel
  if (auto lt = gemm::dtype_support(c.dtype, p, true); !lt.ok) return lt;
  return flash_block_support(shape_of(c), p);
}

}  // namespace

// The plugin's half of this impl, named by its declaration in transformer_block_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = device_supports,
      .make = [] { return std::make_unique<CudaTransformerBlock>(); },
  };
}

}  // namespace opmeter::transformer
