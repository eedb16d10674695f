// The linear impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin, which makes them (Backend::make of the cuda backend).
//   cublaslt          one cublasLtMatmul with bias and activation in its epilogue
//   cublaslt_unfused  the plain cuBLASLt GEMM, then our bias kernel, then our activation kernel,
//                     each a pass over y in memory (the fusion table's GPU baseline)
#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "ops/linear/linear_cuda.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::linear {
using tensor::Act;

Support cublaslt_epilogue_support(Act a) {
  switch (a) {
    case Act::none: case Act::relu: case Act::gelu_tanh: return Support::yes();
    case Act::gelu:
      return Support::no(
          "cuBLASLt's GELU epilogue is the tanh approximation (up to 4e-4 off the exact erf GELU): use act=gelu_tanh, "
          "or impl cublaslt_unfused for act=gelu");
    default:
      return Support::no(fmt::format("cuBLASLt has no epilogue for {} (it has bias, relu and gelu_tanh): use impl "
                                     "cublaslt_unfused",
                                     tensor::to_string(a)));
  }
}

namespace {

const ImplRegistrar reg_fused({
    .op = "linear",
    .impl = "cublaslt",
    .backends = {"cuda"},
    .summary = "cuBLASLt matmul with bias and relu / gelu_tanh in its epilogue (fused), fp32 accumulation",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .supports = [](const Case& c) { return cublaslt_epilogue_support(shape_of(c).act); },
});

const ImplRegistrar reg_unfused({
    .op = "linear",
    .impl = "cublaslt_unfused",
    .backends = {"cuda"},
    .summary = "cuBLASLt matmul, then our bias kernel and our activation kernel, y in memory between them (the "
               "fusion baseline)",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter::linear
