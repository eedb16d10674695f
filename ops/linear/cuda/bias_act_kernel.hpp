#pragma once
// The unfused linear's elementwise passes over y (rows x cols, row-major, fp32 / fp16 / bf16
// storage, fp32 math), each a kernel of its own so that y goes through memory between them as in
// an unfused framework; and the bias rounded to y's type for cuBLASLt's bias epilogue.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/tensor/kernels.hpp"
#include "opmeter/dtype.hpp"

namespace opmeter::linear {

// y[r, j] += bias[j] in place; bias is fp32 (the spec's).
void launch_bias_add(DType d, void* y, const float* bias, std::int64_t rows, std::int64_t cols, cudaStream_t s);
// y = act(y) in place over n elements (act none: nothing enqueued).
void launch_activation(DType d, tensor::Act a, void* y, std::int64_t n, cudaStream_t s);
// dst[i] = bias[i] rounded to nearest in d (fp16 or bf16), i < n.
void launch_bias_convert(DType d, const float* bias, void* dst, std::int64_t n, cudaStream_t s);

}  // namespace opmeter::linear
