#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::add {
// c[i] = a[i] + b[i] for i < n, fp32 / fp16 / bf16 storage, the sum formed in fp32 and rounded
// once. a, b and c must be 16-byte aligned (cudaMalloc'd buffers are).
void launch_add(DType d, const void* a, const void* b, void* c, std::int64_t n, cudaStream_t s);
}  // namespace opmeter::add
