#pragma once
// The softmax's backward inside attention's training step (impl cuda_train): from the kept
// probabilities P and the gradient dP = do v^T, per row of [batch * heads * seq, seq]
//   dS_j = P_j (dP_j - sum_k P_k dP_k) scale
// (the gradient of the scores before scaling: S = scale q k^T). A causal row's hidden keys
// (j > its position) have P = 0, so dS = 0 there: written without reading P or dP.
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::transformer {

// p, ds: rows x n in `dtype` (fp32, fp16, bf16); dp: rows x n fp32; row r is query r % n.
void launch_softmax_backward(DType dtype, const void* p, const float* dp, void* ds, std::int64_t rows, int n, bool causal,
                             float scale, cudaStream_t stream);

}  // namespace opmeter::transformer
