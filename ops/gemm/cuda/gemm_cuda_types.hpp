#pragma once
// CUDA data and compute types of each GEMM dtype, and which GPUs run them.
#include <cublasLt.h>
#include <library_types.h>

#include <fmt/format.h>

#include "opmeter/dtype.hpp"
#include "opmeter/op.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::gemm {

inline constexpr std::size_t kWorkspaceBytes = 32u << 20;  // NVIDIA's advice for Hopper

struct CudaTypes {
  cudaDataType_t ab, c, scale;
  cublasComputeType_t compute;
  const char* compute_name;
  bool integer;  // alpha and beta are int32
};

inline CudaTypes cuda_types(DType d) {
  switch (d) {
    case DType::tf32: return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, "32F_FAST_TF32", false};
    case DType::fp16: return {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, "32F", false};
    case DType::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, "32F", false};
    case DType::fp8_e4m3: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, "32F", false};
    case DType::int8: return {CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, "32I", true};
    default: return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, "32F", false};
  }
}

// bf16 and tf32 need Ampere (8.0), fp8 needs Ada or Hopper (8.9) and cuBLASLt.
inline Support dtype_support(DType d, const cuda::DeviceProps& p, bool lt) {
  auto too_old = [&](const char* what, int cc) {
    return Support::no(fmt::format("{} GEMM needs compute capability {}.{} or newer; {} is {}.{}", what, cc / 10, cc % 10,
                                   p.prop.name, p.prop.major, p.prop.minor));
  };
  if ((d == DType::bf16 || d == DType::tf32) && p.cc() < 80) return too_old(d == DType::bf16 ? "bf16" : "tf32", 80);
  if (d == DType::fp8_e4m3) {
    if (!lt) return Support::no("fp8 GEMM runs through cuBLASLt only (use impl cublaslt)");
    if (p.cc() < 89) return too_old("fp8 (e4m3)", 89);
  }
  return Support::yes();
}

}  // namespace opmeter::gemm
