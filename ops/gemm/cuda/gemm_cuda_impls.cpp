// The gemm impls of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder.
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::gemm {
// The plugin's factories, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cublas_factory();
cuda::Factory cublaslt_factory();
cuda::Factory cuda_factory();

namespace {

const cuda::CudaImplRegistrar reg_cublas({
    .op = "gemm",
    .impl = "cublas",
    .summary = "cuBLAS cublasGemmEx, fp32 accumulation (int8: s8*s8->s32); B stored N x K",
    .dtypes = {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::int8},
    .factory = OPMETER_CUDA_FACTORY(cublas_factory()),
    .preference = ImplDef::plain_library,
});

const cuda::CudaImplRegistrar reg_cublaslt({
    .op = "gemm",
    .impl = "cublaslt",
    .summary = "cuBLASLt matmul, the heuristic's best algorithm (reported); fp8 e4m3 -> bf16 on sm_89+",
    .dtypes = {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3, DType::int8},
    .factory = OPMETER_CUDA_FACTORY(cublaslt_factory()),
    .preference = ImplDef::fused_library,
});

const cuda::CudaImplRegistrar reg_cuda({
    .op = "gemm",
    .impl = "cuda",
    .summary = "simple tiled CUDA kernel, fp32 accumulation: the GPU correctness baseline",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::gemm
