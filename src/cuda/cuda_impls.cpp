// The CUDA impls opmeter knows, declared here so that their case strings are valid on every
// machine; the code behind them is in the CUDA plugin (ops/*/cuda/).
#include "opmeter/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::cuda {
namespace {

ImplDef cuda_impl(std::string op, std::string impl, std::string summary, std::vector<DType> dtypes) {
  return {.op = std::move(op),
          .impl = std::move(impl),
          .backend = "cuda",
          .summary = std::move(summary),
          .dtypes = std::move(dtypes),
          .supports = case_support,
          .make = [] () -> std::unique_ptr<Impl> { throw Unsupported("CUDA impls are made by the plugin"); }};
}

const bool registered = [] {
  auto& reg = Registry::global();
  using enum DType;
  reg.add(cuda_impl("gemm", "cublas", "cuBLAS cublasGemmEx, fp32 accumulation (int8: s8*s8->s32); B stored N x K",
                    {fp32, tf32, fp16, bf16, int8}));
  reg.add(cuda_impl("gemm", "cublaslt",
                    "cuBLASLt matmul, the heuristic's best algorithm (reported); fp8 e4m3 -> bf16 on sm_89+",
                    {fp32, tf32, fp16, bf16, fp8_e4m3, int8}));
  reg.add(cuda_impl("gemm", "cuda", "simple tiled CUDA kernel, fp32 accumulation: the GPU correctness baseline",
                    {fp32, fp16, bf16}));
  reg.add(cuda_impl("bandwidth", "cuda", "grid-stride kernels with 16-byte loads and stores", {fp32}));
  reg.add(cuda_impl("peak", "cuda",
                    "own ceilings: fp32 FMA chains (kernel=fma); tensor-core chains by mma.sync (kernel=mma, sm_80+, fp8 "
                    "sm_89+) or Hopper wgmma (kernel=wgmma, sm_90a)",
                    {fp32, tf32, fp16, bf16, fp8_e4m3, int8}));
  return true;
}();

}  // namespace
}  // namespace opmeter::cuda
