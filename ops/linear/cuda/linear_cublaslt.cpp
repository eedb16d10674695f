// The linear op on CUDA devices through cuBLASLt, y = act(x W^T + b) (linear.hpp):
//   cublaslt          one cublasLtMatmul, bias and activation in its epilogue (BIAS, RELU_BIAS,
//                     GELU_BIAS for act none / relu / gelu_tanh); y is written once
//   cublaslt_unfused  the plain cublasLtMatmul into y, then our bias kernel and our activation
//                     kernel, each reading and rewriting y (bias_act_kernel.cu)
// ln_linear_<act>: both first run opmeter's LayerNorm row kernel (norm_kernels.hpp) from x into
// a rows x hidden buffer with gamma / beta (eps 1e-5, the spec's), then the GEMM reads that buffer.
// Both plan the matmul once (lt_matmul.hpp: the heuristic's candidates timed, the fastest kept,
// as gemm/cublaslt does for the GEMM of the same shape) and then only enqueue it.
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"
#include "ops/linear/cuda/bias_act_kernel.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/linear_cuda.hpp"
#include "ops/norm/cuda/norm_kernels.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::linear {
namespace {
using tensor::Act;

cublasLtEpilogue_t epilogue_of(Act a, bool layernorm) {
  switch (a) {
    case Act::none: return CUBLASLT_EPILOGUE_BIAS;
    case Act::relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Act::gelu_tanh: return CUBLASLT_EPILOGUE_GELU_BIAS;
    default: {
      auto s = cublaslt_epilogue_support(a, layernorm);
      throw Unsupported(s.reason.empty() ? fmt::format("no cuBLASLt epilogue for {}", tensor::to_string(a)) : s.reason);
    }
  }
}

class CublasLtLinear : public cuda::DeviceImpl<LinearOp> {
 public:
  explicit CublasLtLinear(bool fused) : fused_(fused) {}
  // launch() and prepare() read every input through in(); the fp32 bias pointer that the plan
  // keeps is set 0's (after a check its values differ from the copies': the time does not).
  bool rotates_inputs(const Case&) const override { return true; }

  std::map<std::string, std::string> details() const override {
    auto d = lt_.details();
    const auto act = std::string(tensor::to_string(shape_of(case_).act));
    if (fused_) {
      d["bias"] = case_.dtype == DType::fp32 ? "fp32, in the epilogue"
                                             : fmt::format("rounded to {} once (cuBLASLt's bias has y's type), in the epilogue",
                                                           to_string(case_.dtype));
    } else {
      d["passes"] = fmt::format("GEMM, bias kernel{}: y through memory between them",
                                shape_of(case_).act == Act::none ? "" : ", " + act + " kernel");
    }
    if (shape_of(case_).layernorm)
      d["layernorm"] =
          fmt::format("our kernel ({}), its output (rows x hidden) through memory before the GEMM", ln_plan_.shape);
    return d;
  }

 private:
  void prepare() override {
    const auto s = shape_of(case_);
    // LayerNorm runs here too, so that the GEMM's plan is timed on the normalized rows it reads.
    if (s.layernorm) normalize(s);
    // Fresh inputs come before each check: the bias is converted again, the plan is kept (the
    // buffers stay where they are), so the check runs the algorithm that was timed.
    const void* bias = nullptr;
    if (fused_) {
      if (case_.dtype == DType::fp32) {
        bias = in(kBias);
      } else {
        if (bias_.bytes() != s.out * size_of(case_.dtype)) bias_ = cuda::DeviceBuffer(s.out * size_of(case_.dtype));
        launch_bias_convert(case_.dtype, static_cast<const float*>(in(kBias)), bias_.data(),
                            static_cast<std::int64_t>(s.out), stream());
        cuda::check(cudaGetLastError(), "bias conversion kernel");
        bias = bias_.data();
      }
    }
    if (lt_.planned()) return;
    lt_.plan({.dtype = case_.dtype,
              .M = s.rows,
              .N = s.out,
              .K = s.hidden,
              .epilogue = fused_ ? epilogue_of(s.act, s.layernorm) : CUBLASLT_EPILOGUE_DEFAULT,
              .bias = bias},
             gemm_a(), in(kW), out(), stream());
  }

  // The GEMM's left operand: x, or LayerNorm(x) for ln_linear.
  const void* gemm_a() const { return ln_.data() ? ln_.data() : in(kX); }

  // ln_ = LayerNorm(x) with gamma / beta; the buffer and the kernel's plan are made once.
  void normalize(const Shape& s) {
    const auto rows = static_cast<std::int64_t>(s.rows);
    const int hidden = static_cast<int>(s.hidden);
    if (!ln_.data()) {
      const auto& p = cuda::props(device()).prop;
      ln_plan_ = norm::plan_rows(norm::RowOp::layernorm, case_.dtype, rows, hidden,
                                 {p.multiProcessorCount, p.sharedMemPerBlockOptin});
      ln_ = cuda::DeviceBuffer(s.rows * s.hidden * size_of(case_.dtype));
    }
    norm::launch_rows(ln_plan_,
                      {.x = in(kX),
                       .y = ln_.data(),
                       .gamma = static_cast<const float*>(in(kGamma)),
                       .beta = static_cast<const float*>(in(kBeta)),
                       .rows = rows,
                       .hidden = hidden},
                      stream());
    cuda::check(cudaGetLastError(), "LayerNorm kernel");
  }

  void launch() override {
    const auto s = shape_of(case_);
    if (s.layernorm) normalize(s);
    lt_.run(gemm_a(), in(kW), out(), stream());
    if (fused_) return;
    const auto rows = static_cast<std::int64_t>(s.rows), cols = static_cast<std::int64_t>(s.out);
    launch_bias_add(case_.dtype, out(), static_cast<const float*>(in(kBias)), rows, cols, stream());
    launch_activation(case_.dtype, s.act, out(), rows * cols, stream());
  }

  bool fused_;
  gemm::LtMatmul lt_;
  cuda::DeviceBuffer bias_;  // fp16 / bf16: the bias in y's type, for the epilogue
  cuda::DeviceBuffer ln_;    // ln_linear: LayerNorm(x), rows x hidden in x's type
  norm::RowPlan ln_plan_;
};

// cuBLASLt's dtypes by compute capability (bf16: 8.0+), as for gemm/cublaslt; both impls run a
// kernel of ours too (bias conversion or bias and activation passes).
Support device_support(const Case& c, const cuda::DeviceProps& p) {
  if (auto s = gemm::dtype_support(c.dtype, p, true); !s.ok) return s;
  // The row kernels take hidden as an int (the op's own limits keep it far below).
  if (const auto s = shape_of(c); s.layernorm && s.hidden > std::size_t(std::numeric_limits<int>::max()))
    return Support::no(fmt::format("hidden={} is beyond the LayerNorm kernel's int range", s.hidden));
  return cuda::own_kernels_run_on(p);
}

}  // namespace

// The plugin's half of cublaslt (fused) and cublaslt_unfused, named by their declarations in
// linear_cuda_impls.cpp.
cuda::Factory cublaslt_factory(bool fused) {
  return {
      .supports = device_support,
      .make = [fused] { return std::make_unique<CublasLtLinear>(fused); },
  };
}

}  // namespace opmeter::linear
