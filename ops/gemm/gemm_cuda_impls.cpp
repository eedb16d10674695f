// The gemm impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin, which makes them (Backend::make of the cuda backend).
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

const ImplRegistrar reg_cublas({
    .op = "gemm",
    .impl = "cublas",
    .preference = ImplDef::plain_library,
    .backends = {"cuda"},
    .summary = "cuBLAS cublasGemmEx, fp32 accumulation (int8: s8*s8->s32); B stored N x K",
    .dtypes = {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::int8},
});

const ImplRegistrar reg_cublaslt({
    .op = "gemm",
    .impl = "cublaslt",
    .preference = ImplDef::fused_library,
    .backends = {"cuda"},
    .summary = "cuBLASLt matmul, the heuristic's best algorithm (reported); fp8 e4m3 -> bf16 on sm_89+",
    .dtypes = {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3, DType::int8},
});

const ImplRegistrar reg_cuda({
    .op = "gemm",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "simple tiled CUDA kernel, fp32 accumulation: the GPU correctness baseline",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter
