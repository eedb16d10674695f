#pragma once
// cublaslt_fp8_train's passes over a bf16 tensor src (rows x cols, row-major), 32 x 32 tiles:
//   reduce:   |src|'s largest value per row, per column and / or over the tensor, and the column
//             sums (db from dz), from one read; atomics into outputs this call zeroes first
//   scales:   amax -> dequantization scale in place (fp8_train::scale_from_amax): no host sync
//   quantize: codes = saturate(src / scale) in e4m3 or e5m2, and / or the transposed codes
//             (cols x rows) that Hopper's TN-only fp8 GEMM needs, from the same read
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/linear/fp8_scale.hpp"

namespace opmeter::linear::fp8_cuda {

// Each output may be null (not computed).
struct Reduce {
  float* row_amax = nullptr;     // rows floats
  float* col_amax = nullptr;     // cols floats
  float* tensor_amax = nullptr;  // one float
  float* col_sum = nullptr;      // cols floats
};
void launch_reduce(const void* src, std::int64_t rows, std::int64_t cols, const Reduce& out, cudaStream_t s);

// scale[i] = scale_from_amax(scale[i], max_finite) for i < n, in place.
void launch_scales(float* amax_then_scale, std::int64_t n, float max_finite, cudaStream_t s);

struct Quantize {
  const void* src = nullptr;
  std::int64_t rows = 0, cols = 0;
  // rowwise: row_scale has rows floats (codes), col_scale cols floats (codes_t); else each
  // points at the tensor's one scale.
  const float* row_scale = nullptr;
  const float* col_scale = nullptr;
  bool rowwise = false;
  fp8_train::Format format = fp8_train::Format::e4m3;
  std::uint8_t* codes = nullptr;    // rows x cols, or null
  std::uint8_t* codes_t = nullptr;  // cols x rows (src transposed), or null
};
void launch_quantize(const Quantize& q, cudaStream_t s);

}  // namespace opmeter::linear::fp8_cuda
