// The linear and ln_linear_<act> impls of CUDA devices, each declared once
// (include/opmeter/cuda/cuda_impl.hpp). This file is compiled into opmeter, which lists and plans them on any
// machine (`skipped` with the reason where no GPU or plugin is), and into the CUDA plugin, which
// makes them through the factories beside their kernels in this folder.
//   cublaslt          one cublasLtMatmul with bias and activation in its epilogue
//   cublaslt_unfused  the plain cuBLASLt GEMM, then our bias kernel, then our activation kernel,
//                     each a pass over y in memory (the fusion table's GPU baseline)
// ln_linear_<act>: both run opmeter's LayerNorm kernel first, its output through memory (as
// onednn does: no library fuses LayerNorm into the GEMM's prologue), so the pair measures the
// epilogue's fusion of bias and activation.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "ops/linear/linear_cuda.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::linear {
using tensor::Act;

Support cublaslt_epilogue_support(Act a, bool layernorm) {
  switch (a) {
    case Act::none: case Act::relu: case Act::gelu_tanh: return Support::yes();
    case Act::gelu:
      return Support::no(fmt::format(
          "cuBLASLt's GELU epilogue is the tanh approximation (up to 4e-4 off the exact erf GELU): use {}, or impl "
          "cublaslt_unfused for {}",
          layernorm ? "op ln_linear_gelu_tanh" : "act=gelu_tanh", layernorm ? "ln_linear_gelu" : "act=gelu"));
    default:
      return Support::no(fmt::format("cuBLASLt has no epilogue for {} (it has bias, relu and gelu_tanh): use impl "
                                     "cublaslt_unfused",
                                     tensor::to_string(a)));
  }
}

// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cublaslt_factory(bool fused);

namespace {

const bool registered = [] {
  for (auto& op : linear_ops()) {
    const std::string ln = op == "linear" ? "" : "our LayerNorm kernel, then ";
    cuda::CudaImplRegistrar({
        .op = op,
        .impl = "cublaslt",
        .summary = ln + "cuBLASLt matmul with bias and relu / gelu_tanh in its epilogue (fused), fp32 accumulation",
        .dtypes = {DType::fp32, DType::fp16, DType::bf16},
        .supports =
            [](const Case& c) {
              const auto s = shape_of(c);
              return cublaslt_epilogue_support(s.act, s.layernorm);
            },
        .factory = OPMETER_CUDA_FACTORY(cublaslt_factory(true)),
        .preference = ImplDef::fused_library,
    });
    cuda::CudaImplRegistrar({
        .op = op,
        .impl = "cublaslt_unfused",
        .summary = ln + "cuBLASLt matmul, then our bias kernel and our activation kernel, y in memory between them "
                        "(the fusion baseline)",
        .dtypes = {DType::fp32, DType::fp16, DType::bf16},
        .factory = OPMETER_CUDA_FACTORY(cublaslt_factory(false)),
        .preference = ImplDef::unfused,
    });
  }
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
