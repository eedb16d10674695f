#pragma once
// opmeter's row-normalization kernels (layernorm, rmsnorm, softmax along hidden) and BatchNorm
// inference, fp32 / fp16 / bf16 storage with fp32 math and fp32 statistics.
//
// Row kernels are planned once per case (plan_rows: which kernel, its grid and shared memory) and
// launched many times. Three shapes, by row width:
//   group   a row per G = 1..32 lanes of a warp (narrow rows), the row held in registers;
//   block   a row per block of up to 512 threads (up to 32 values per thread in registers);
//   wide    a row per block of 1024 threads, streamed twice: statistics, then the output; as much
//           of the row as shared memory holds is kept there, the rest is read again (from L2).
// Rows whose start is not 16-byte aligned (hidden not a multiple of 16 bytes) take scalar accesses.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "opmeter/dtype.hpp"
#include "opmeter/cuda/sm_info.hpp"

namespace opmeter::norm {

enum class RowOp { layernorm, rmsnorm, softmax };

struct RowArgs {
  const void* x = nullptr;
  void* y = nullptr;
  const float* gamma = nullptr;  // layernorm, rmsnorm
  const float* beta = nullptr;   // layernorm
  std::int64_t rows = 0;
  int hidden = 0;
  int cached_vectors = 0;  // wide: leading vectors of a row kept in shared memory
};

struct RowPlan {
  void (*kernel)(RowArgs) = nullptr;
  unsigned grid = 1;
  unsigned threads = 32;
  std::size_t smem = 0;
  int cached_vectors = 0;
  std::string shape;  // for the result's details, e.g. "row per 8 lanes, 16-byte accesses, in registers"
};

// Throws std::runtime_error on a CUDA error (occupancy query, shared-memory opt-in).
RowPlan plan_rows(RowOp op, DType d, std::int64_t rows, int hidden, const cuda::SmInfo& sm);
void launch_rows(const RowPlan& plan, RowArgs args, cudaStream_t s);

// BatchNorm inference with channels along hidden: scale = gamma / sqrt(var + eps) and
// shift = beta - mean * scale per channel into `scale_shift` (2 * hidden floats), then
// y = x * scale + shift in one pass.
void launch_batchnorm(DType d, const void* x, void* y, const float* mean, const float* var, const float* gamma,
                      const float* beta, float* scale_shift, std::int64_t rows, int hidden, const cuda::SmInfo& sm,
                      cudaStream_t s);

}  // namespace opmeter::norm
