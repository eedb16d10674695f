#pragma once
// The backward of transformer_block's self-attention on the CPU. Per group of (batch, head)
// pairs, their q, k, v and do gathered to [group, seq, d] in the step's type and the
// probabilities recomputed (as FlashAttention's backward does: the forward keeps no P), then
//   S = q k^T (oneDNN),  P = softmax(S scale) (causal: masked to 0),  D_i = do_i . o_i,
//   dP = do v^T (oneDNN),  dS = P (dP - D) scale,
//   dv = P^T do,  dq = dS k,  dk = dS^T q  (oneDNN, transposes as strides),
// and dq, dk, dv written into the rows of dqkv (rows x 3 hidden, as qkv). The five products are
// oneDNN matmuls batched over the group's heads (oneDNN threads over them), accumulating in fp32
// into fp32 S, dP, dq, dk, dv. In fp32 every operand is fp32; in bf16 (as FlashAttention's
// 16-bit backward) q, k, v, do are gathered as stored and P and dS rounded to bf16 for the three
// products that read them, so all five run on bf16 units (AMX where the CPU has it). A group's
// scores (P and dP in fp32, plus their bf16 copies in bf16) stay under kScoresBytes: a few MiB,
// so that the softmax pass and the products after it find them in the caches (groups of 2 heads
// at seq 512 in bf16 ran the backward ~20% faster than all 16 in one 48 MiB group).
#include <cstddef>
#include <vector>

#include "opmeter/buffer.hpp"
#include "ops/tensor/onednn_util.hpp"
#include "ops/tensor/train_kernels.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

class SelfAttentionBackward {
 public:
  static constexpr std::size_t kScoresBytes = std::size_t(8) << 20;
  // Buffers and primitives for shape s in e's type (threads: unused, oneDNN and OpenMP take their
  // maximum); scores_bytes bounds a group's scores (tests make it small to split the heads into groups).
  void prepare(const Shape& s, tensor::Elems e, int threads, std::size_t scores_bytes = kScoresBytes);
  // qkv: rows x 3 hidden; o, dout: rows x hidden; dqkv: rows x 3 hidden; all in prepare's type.
  void run(const Shape& s, const void* qkv, const void* o, const void* dout, void* dqkv);
  // (batch, head) pairs per group: all of them when their scores fit scores_bytes.
  static std::size_t group_size(const Shape& s, tensor::Elems e, std::size_t scores_bytes = kScoresBytes);

 private:
  // The five products for a group of g heads over this object's buffers.
  struct Products {
    std::size_t g = 0;
    dnnl::matmul scores, dp, dv, dq, dk;
    tensor::OnednnArgs scores_args, dp_args, dv_args, dq_args, dk_args;
  };
  Products make_products(std::size_t g);
  void run_group(const Shape& s, const Products& p, std::size_t t0, const void* qkv, const void* o, const void* dout,
                 void* dqkv);

  tensor::Elems e_{false};
  std::size_t n_ = 0, d_ = 0;
  float scale_ = 1;
  // Of the largest group, in the step's type: q, k, v, do [g, n, d]; in bf16 also P and dS [g, n, n].
  Buffer q_, k_, v_, do_, p16_, ds16_;
  // fp32: dq, dk, dv [g, n, d]; S / P and dP / dS [g, n, n]; D [g, n].
  std::vector<float> dq_, dk_, dv_, p_, dp_, rowdot_;
  Products full_, rest_;
};

}  // namespace opmeter::transformer
