#pragma once
// The batched matrix products of transformer_block's attention in a training step (impl
// cuda_train), as cuBLAS strided-batched GEMMs over one sequence's heads: which tensor each
// operand is, where it starts, its leading dimension and the stride from head to head. q, k and
// v are read where the QKV projection wrote them (rows x 3 hidden, head i at columns i*d of its
// part), o and do are rows x hidden, dq dk dv are written into dqkv (as qkv), and the scores
// (S, then dP), P and dS are [batch * heads, seq, seq] row-major. cuBLAS is column-major: a
// row-major X (r x c, ld) is read as X^T, so each product C = A B is computed as C^T = B^T A^T.
//   forward   S = scale q k^T,  o = P v
//   backward  dP = do v^T,  dv = P^T do,  dq = dS k,  dk = dS^T q
// Plain C++, so that the CPU tests run these descriptions through a reference GEMM.
#include <cstdint>

namespace opmeter::transformer {

// The tensors the products read and write.
enum class AttnBuf { qkv, o, dout, scores, probs, dscores, dqkv };

struct AttnOperand {
  AttnBuf buf;
  std::int64_t offset;  // elements, the first head's
  std::int64_t ld;      // leading dimension (elements)
  std::int64_t stride;  // from one head to the next (elements)
};

// C (m x n column-major) = alpha op(A) op(B), op = transpose where trans_*; batch_count heads.
struct AttnProduct {
  const char* name;
  bool trans_a, trans_b;
  std::int64_t m, n, k;
  AttnOperand a, b, c;
  float alpha;
  std::int64_t batch_count;
};

struct AttnDims {
  std::int64_t batch, seq, heads, head_dim;
  float scale;
  std::int64_t hidden() const { return heads * head_dim; }
};

enum class AttnStep { scores, out, dprobs, dv, dq, dk };
inline constexpr AttnStep kAttnForward[] = {AttnStep::scores, AttnStep::out};
inline constexpr AttnStep kAttnBackward[] = {AttnStep::dprobs, AttnStep::dv, AttnStep::dq, AttnStep::dk};

// Step `step` of sequence `b`.
inline AttnProduct attn_product(const AttnDims& s, AttnStep step, std::int64_t b) {
  const std::int64_t n = s.seq, d = s.head_dim, h = s.hidden();
  const std::int64_t qkv0 = b * n * 3 * h, row0 = b * n * h, sq0 = b * s.heads * n * n;
  const AttnOperand q{AttnBuf::qkv, qkv0, 3 * h, d}, k{AttnBuf::qkv, qkv0 + h, 3 * h, d},
      v{AttnBuf::qkv, qkv0 + 2 * h, 3 * h, d};
  const AttnOperand o{AttnBuf::o, row0, h, d}, dout{AttnBuf::dout, row0, h, d};
  const AttnOperand dq{AttnBuf::dqkv, qkv0, 3 * h, d}, dk{AttnBuf::dqkv, qkv0 + h, 3 * h, d},
      dv{AttnBuf::dqkv, qkv0 + 2 * h, 3 * h, d};
  auto square = [&](AttnBuf buf) { return AttnOperand{buf, sq0, n, n * n}; };
  // The stored q, k, v, o, do (n x d row-major) read column-major are their transposes (d x n);
  // a stored square X likewise is X^T.
  switch (step) {
    case AttnStep::scores:  // S^T = k q^T: k^T stored, used transposed; q^T as stored
      return {"S = scale q k^T", true, false, n, n, d, k, q, square(AttnBuf::scores), s.scale, s.heads};
    case AttnStep::out:  // o^T = v^T P^T: both as stored
      return {"o = P v", false, false, d, n, n, v, square(AttnBuf::probs), o, 1.0f, s.heads};
    case AttnStep::dprobs:  // dP^T = v do^T
      return {"dP = do v^T", true, false, n, n, d, v, dout, square(AttnBuf::scores), 1.0f, s.heads};
    case AttnStep::dv:  // dv^T = do^T P
      return {"dv = P^T do", false, true, d, n, n, dout, square(AttnBuf::probs), dv, 1.0f, s.heads};
    case AttnStep::dq:  // dq^T = k^T dS^T
      return {"dq = dS k", false, false, d, n, n, k, square(AttnBuf::dscores), dq, 1.0f, s.heads};
    case AttnStep::dk:  // dk^T = q^T dS
      return {"dk = dS^T q", false, true, d, n, n, q, square(AttnBuf::dscores), dk, 1.0f, s.heads};
  }
  return {};
}

}  // namespace opmeter::transformer
