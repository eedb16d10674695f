// Attention's work models, fused and as three separate ops, per stage, counted by hand from
// what each stage computes (attention.hpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/registry.hpp"

using namespace opmeter;

namespace {

Case attention(const char* dtype, const char* stage, int causal = 0) {
  return parse_case(fmt::format("attention/opmeter/{}/batch=1,heads=2,seq=8,head_dim=4,causal={},stage={}/threads=1",
                                dtype, causal, stage));
}

}  // namespace

// batch 1 x heads 2, seq n = 8, head_dim d = 4, fp32. Per head:
//   S = scale q k^T: n x n dot products of length d, a multiply and an add each: 2 n^2 d = 512
//       (the scale folded into q or the product: O(n d) or no extra work, not counted);
//   P = softmax(S) along each row: max, subtract, exp, sum, divide: 5 n^2 = 320;
//   O = P v: n x d dot products of length n: 2 n^2 d = 512.
// Memory, fused (nothing but the inputs and the output leave the cache): q, k (and v for full),
// n x d each, read once; the stage's output written once: S or P (n x n) or O (n x d).
TEST(AttentionOp, FusedWorkPerStageIsCountedByHand) {
  const OpDef* op = Registry::global().op("attention");
  ASSERT_NE(op, nullptr);
  const double heads = 2, n = 8, d = 4, e = 4;
  auto scores = op->work(attention("fp32", "scores"));
  EXPECT_DOUBLE_EQ(scores.flops, heads * 2 * n * n * d);       // 1024
  EXPECT_DOUBLE_EQ(scores.bytes_read, heads * 2 * n * d * e);  // q, k: 512 B
  EXPECT_DOUBLE_EQ(scores.bytes_written, heads * n * n * e);   // S: 512 B
  auto probs = op->work(attention("fp32", "probs"));
  EXPECT_DOUBLE_EQ(probs.flops, heads * (2 * n * n * d + 5 * n * n));  // 1664
  EXPECT_DOUBLE_EQ(probs.bytes_read, heads * 2 * n * d * e);
  EXPECT_DOUBLE_EQ(probs.bytes_written, heads * n * n * e);  // P
  auto full = op->work(attention("fp32", "full"));
  EXPECT_DOUBLE_EQ(full.flops, 2688);                    // 2 x (512 + 320 + 512)
  EXPECT_DOUBLE_EQ(full.bytes_read, 2 * 8 * 4 * 4 * 3);  // q, k, v: 768 B
  EXPECT_DOUBLE_EQ(full.bytes_written, 2 * 8 * 4 * 4);   // O: 256 B
  // Causal masking skips about half of S, but the model counts the square (attention.cpp's
  // stated convention): the same work with and without the mask.
  auto causal = op->work(attention("fp32", "full", 1));
  EXPECT_DOUBLE_EQ(causal.flops, full.flops);
  EXPECT_DOUBLE_EQ(causal.bytes(), full.bytes());
  // bf16: the same math, q, k, v and O in 2 bytes.
  auto half = op->work(attention("bf16", "full"));
  EXPECT_DOUBLE_EQ(half.flops, 2688);
  EXPECT_DOUBLE_EQ(half.bytes_read, 2 * 8 * 4 * 2 * 3);
  EXPECT_DOUBLE_EQ(half.bytes_written, 2 * 8 * 4 * 2);
}

// The three-op sequence (matmul, softmax, matmul) with intermediates in memory:
//   scores: one op, S is its output: nothing more than fused;
//   probs:  the matmul writes S in fp32 and softmax reads it back (+ n^2 x 4 B each way per head);
//   full:   also P written by softmax and read by P v, in the case's dtype (+ n^2 x e each way).
// The flops are the same math.
TEST(AttentionOp, UnfusedWorkAddsTheIntermediatesWrittenAndReadBack) {
  const OpDef* op = Registry::global().op("attention");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->unfused_work);
  const double heads = 2, n = 8;
  for (const char* dtype : {"fp32", "bf16"}) {
    const double e = std::string(dtype) == "fp32" ? 4 : 2;
    const double s_bytes = heads * n * n * 4, p_bytes = heads * n * n * e;
    for (const char* stage : {"scores", "probs", "full"}) {
      const std::string st = stage;
      auto fused = op->work(attention(dtype, stage));
      auto unfused = op->unfused_work(attention(dtype, stage));
      const double extra = st == "scores" ? 0 : st == "probs" ? s_bytes : s_bytes + p_bytes;
      EXPECT_DOUBLE_EQ(unfused.flops, fused.flops) << dtype << " " << stage;
      EXPECT_DOUBLE_EQ(unfused.bytes_read, fused.bytes_read + extra) << dtype << " " << stage;
      EXPECT_DOUBLE_EQ(unfused.bytes_written, fused.bytes_written + extra) << dtype << " " << stage;
    }
  }
  // fp32 full, in numbers: 768 + 512 (S) + 512 (P) read, 256 + 512 + 512 written.
  auto u = op->unfused_work(attention("fp32", "full"));
  EXPECT_DOUBLE_EQ(u.bytes_read, 1792);
  EXPECT_DOUBLE_EQ(u.bytes_written, 1280);
}
