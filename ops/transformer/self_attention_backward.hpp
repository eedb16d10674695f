#pragma once
// The backward of transformer_block's self-attention on the CPU. Per group of (batch, head)
// pairs, their q, k, v and do gathered to fp32 [group, seq, d] and the probabilities recomputed
// (as FlashAttention's backward does: the forward keeps no P), then
//   S = q k^T (oneDNN),  P = softmax(S scale) (causal: masked to 0),  D_i = do_i . o_i,
//   dP = do v^T (oneDNN),  dS = P (dP - D) scale,
//   dv = P^T do,  dq = dS k,  dk = dS^T q  (oneDNN, transposes as strides),
// and dq, dk, dv written into the rows of dqkv (rows x 3 hidden, as qkv). The five products are
// fp32 oneDNN matmuls batched over the group's heads (oneDNN threads over them); a group's
// P and dP (2 group seq^2 floats) stay under kScoresBytes.
#include <cstddef>
#include <vector>

#include "ops/tensor/onednn_util.hpp"
#include "ops/tensor/train_kernels.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

class SelfAttentionBackward {
 public:
  static constexpr std::size_t kScoresBytes = std::size_t(128) << 20;
  // Buffers and primitives for shape s (threads: unused, oneDNN and OpenMP take their maximum);
  // scores_bytes bounds a group's P and dP (tests make it small to split the heads into groups).
  void prepare(const Shape& s, int threads, std::size_t scores_bytes = kScoresBytes);
  // qkv: rows x 3 hidden; o, dout: rows x hidden; dqkv: rows x 3 hidden.
  void run(const Shape& s, tensor::Elems e, const void* qkv, const void* o, const void* dout, void* dqkv);
  // (batch, head) pairs per group: all of them when their scores fit kScoresBytes.
  static std::size_t group_size(const Shape& s, std::size_t scores_bytes = kScoresBytes);

 private:
  // The five products for a group of g heads over this object's buffers.
  struct Products {
    std::size_t g = 0;
    dnnl::matmul scores, dp, dv, dq, dk;
    tensor::OnednnArgs scores_args, dp_args, dv_args, dq_args, dk_args;
  };
  Products make_products(std::size_t g);
  void run_group(const Shape& s, tensor::Elems e, const Products& p, std::size_t t0, const void* qkv, const void* o,
                 const void* dout, void* dqkv);

  std::size_t n_ = 0, d_ = 0;
  // fp32 buffers of the largest group: [g, n, d] each, [g, n, n] for P and dP (dS in place), [g, n] D.
  std::vector<float> q_, k_, v_, do_, dq_, dk_, dv_, p_, dp_, rowdot_;
  Products full_, rest_;
};

}  // namespace opmeter::transformer
