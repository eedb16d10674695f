#pragma once
// The middle step of the three-op attention (cuda_unfused) and the causal mask of its scores.
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::attention {

// P = softmax of each row of S (fp32, rows x n, row r is query r % n of its head) over the keys
// the row sees (all, or j <= r % n when causal); the rest of P is written 0. P in `dtype`
// (fp32, fp16, bf16), same layout. S and P must be 16-byte aligned.
void launch_masked_softmax(DType dtype, const float* s, void* p, std::int64_t rows, int n, bool causal,
                           cudaStream_t stream);

// Writes -inf to every score a causal row does not see (j > r % n), in `dtype`.
void launch_mask_future_scores(DType dtype, void* s, std::int64_t rows, int n, cudaStream_t stream);

}  // namespace opmeter::attention
