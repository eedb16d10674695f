#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::gemm {
// C (M x N) = A (M x K) * B^T (B stored N x K), fp32 accumulation; fp32, fp16 or bf16 in and out.
void launch_reference_gemm(DType d, const void* a, const void* b, void* c, std::int64_t M, std::int64_t N, std::int64_t K,
                           cudaStream_t s);
}  // namespace opmeter::gemm
