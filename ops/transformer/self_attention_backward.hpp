#pragma once
// The backward of transformer_block's self-attention on the CPU, written plainly: per (batch,
// head) that head's q, k, v, its output o and do gathered to fp32, then per query i the scores
// and probabilities recomputed (as FlashAttention's backward does: P is not kept),
//   D_i = do_i . o_i,  dS_ij = P_ij (do_i . v_j - D_i) scale,
//   dq_i = sum_j dS_ij k_j,  dk_j += dS_ij q_i,  dv_j += P_ij do_i,
// and dq, dk, dv written into the rows of dqkv (rows x 3 hidden, as qkv).
#include <vector>

#include "ops/tensor/train_kernels.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

class SelfAttentionBackward {
 public:
  // Buffers for `threads` threads (at least OpenMP's maximum).
  void prepare(const Shape& s, int threads);
  // qkv: rows x 3 hidden; o, dout: rows x hidden; dqkv: rows x 3 hidden.
  void run(const Shape& s, tensor::Elems e, const void* qkv, const void* o, const void* dout, void* dqkv);

 private:
  std::vector<std::vector<float>> per_thread_;
};

}  // namespace opmeter::transformer
