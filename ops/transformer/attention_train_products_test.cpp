// The batched products of cuda_train's attention (attention_train_products.hpp), run through a
// column-major strided-batched GEMM with cuBLAS's semantics on the host, against the products
// written as plain loops over (sequence, head, query, key, column): every element of S, o, dP
// and of dq, dk, dv in dqkv, each written once.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "ops/transformer/attention_train_products.hpp"

using namespace opmeter::transformer;

namespace {

using Buffers = std::map<AttnBuf, std::vector<double>>;

// cublasGemmStridedBatchedEx's meaning: C_p = alpha op(A_p) op(B_p), column-major, beta = 0.
void host_gemm(const AttnProduct& g, Buffers& bufs) {
  ASSERT_GE(g.a.ld, g.trans_a ? g.k : g.m) << g.name;
  ASSERT_GE(g.b.ld, g.trans_b ? g.n : g.k) << g.name;
  ASSERT_GE(g.c.ld, g.m) << g.name;
  const auto& A = bufs.at(g.a.buf);
  const auto& B = bufs.at(g.b.buf);
  auto& C = bufs.at(g.c.buf);
  for (std::int64_t p = 0; p < g.batch_count; ++p) {
    const std::int64_t ao = g.a.offset + p * g.a.stride, bo = g.b.offset + p * g.b.stride, co = g.c.offset + p * g.c.stride;
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (std::int64_t l = 0; l < g.k; ++l) {
          const double a = g.trans_a ? A.at(ao + l + i * g.a.ld) : A.at(ao + i + l * g.a.ld);
          const double b = g.trans_b ? B.at(bo + j + l * g.b.ld) : B.at(bo + l + j * g.b.ld);
          sum += a * b;
        }
        C.at(co + i + j * g.c.ld) = g.alpha * sum;
      }
  }
}

struct Fixture {
  AttnDims s{.batch = 2, .seq = 5, .heads = 3, .head_dim = 4, .scale = 0.5f};
  std::int64_t n = s.seq, d = s.head_dim, h = s.hidden(), rows = s.batch * s.seq, bh = s.batch * s.heads;
  Buffers bufs;
  Fixture() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    auto random = [&](std::int64_t count) {
      std::vector<double> v(static_cast<std::size_t>(count));
      for (auto& x : v) x = u(rng);
      return v;
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    bufs[AttnBuf::qkv] = random(rows * 3 * h);
    bufs[AttnBuf::dout] = random(rows * h);
    bufs[AttnBuf::probs] = random(bh * n * n);
    bufs[AttnBuf::dscores] = random(bh * n * n);
    bufs[AttnBuf::o] = std::vector<double>(static_cast<std::size_t>(rows * h), nan);
    bufs[AttnBuf::scores] = std::vector<double>(static_cast<std::size_t>(bh * n * n), nan);
    bufs[AttnBuf::dqkv] = std::vector<double>(static_cast<std::size_t>(rows * 3 * h), nan);
  }
  void run(AttnStep step) {
    for (std::int64_t b = 0; b < s.batch; ++b) host_gemm(attn_product(s, step, b), bufs);
  }
  // Element c of head t's part `part` (0 q, 1 k, 2 v) at position i of sequence b, in qkv's layout.
  std::int64_t qkv_at(std::int64_t b, std::int64_t i, std::int64_t t, int part, std::int64_t c) const {
    return (b * n + i) * 3 * h + part * h + t * d + c;
  }
  std::int64_t row_at(std::int64_t b, std::int64_t i, std::int64_t t, std::int64_t c) const {
    return (b * n + i) * h + t * d + c;
  }
  std::int64_t square_at(std::int64_t b, std::int64_t t, std::int64_t i, std::int64_t j) const {
    return ((b * s.heads + t) * n + i) * n + j;
  }
  double qkv(std::int64_t b, std::int64_t i, std::int64_t t, int part, std::int64_t c) const {
    return bufs.at(AttnBuf::qkv).at(qkv_at(b, i, t, part, c));
  }
  double sq(AttnBuf buf, std::int64_t b, std::int64_t t, std::int64_t i, std::int64_t j) const {
    return bufs.at(buf).at(square_at(b, t, i, j));
  }
  double dout(std::int64_t b, std::int64_t i, std::int64_t t, std::int64_t c) const {
    return bufs.at(AttnBuf::dout).at(row_at(b, i, t, c));
  }
};

}  // namespace

TEST(AttentionTrainProducts, ForwardProductsAreScaledScoresAndProbabilitiesTimesValues) {
  Fixture f;
  f.run(AttnStep::scores);
  f.run(AttnStep::out);
  for (std::int64_t b = 0; b < f.s.batch; ++b)
    for (std::int64_t t = 0; t < f.s.heads; ++t)
      for (std::int64_t i = 0; i < f.n; ++i) {
        for (std::int64_t j = 0; j < f.n; ++j) {
          double s = 0;
          for (std::int64_t c = 0; c < f.d; ++c) s += f.qkv(b, i, t, 0, c) * f.qkv(b, j, t, 1, c);
          ASSERT_NEAR(f.sq(AttnBuf::scores, b, t, i, j), 0.5 * s, 1e-12) << b << " " << t << " " << i << " " << j;
        }
        for (std::int64_t c = 0; c < f.d; ++c) {
          double o = 0;
          for (std::int64_t j = 0; j < f.n; ++j) o += f.sq(AttnBuf::probs, b, t, i, j) * f.qkv(b, j, t, 2, c);
          ASSERT_NEAR(f.bufs[AttnBuf::o].at(f.row_at(b, i, t, c)), o, 1e-12) << b << " " << t << " " << i << " " << c;
        }
      }
}

TEST(AttentionTrainProducts, BackwardProductsAreTheGradientsOfQKV) {
  Fixture f;
  f.run(AttnStep::dprobs);
  for (AttnStep step : {AttnStep::dv, AttnStep::dq, AttnStep::dk}) f.run(step);
  for (std::int64_t b = 0; b < f.s.batch; ++b)
    for (std::int64_t t = 0; t < f.s.heads; ++t)
      for (std::int64_t i = 0; i < f.n; ++i) {
        for (std::int64_t j = 0; j < f.n; ++j) {  // dP = do v^T
          double dp = 0;
          for (std::int64_t c = 0; c < f.d; ++c) dp += f.dout(b, i, t, c) * f.qkv(b, j, t, 2, c);
          ASSERT_NEAR(f.sq(AttnBuf::scores, b, t, i, j), dp, 1e-12) << b << " " << t << " " << i << " " << j;
        }
        for (std::int64_t c = 0; c < f.d; ++c) {
          double dq = 0, dk = 0, dv = 0;
          for (std::int64_t j = 0; j < f.n; ++j) {
            dq += f.sq(AttnBuf::dscores, b, t, i, j) * f.qkv(b, j, t, 1, c);  // dS k
            dk += f.sq(AttnBuf::dscores, b, t, j, i) * f.qkv(b, j, t, 0, c);  // dS^T q
            dv += f.sq(AttnBuf::probs, b, t, j, i) * f.dout(b, j, t, c);      // P^T do
          }
          const auto& dqkv = f.bufs[AttnBuf::dqkv];
          ASSERT_NEAR(dqkv.at(f.qkv_at(b, i, t, 0, c)), dq, 1e-12) << b << " " << t << " " << i << " " << c;
          ASSERT_NEAR(dqkv.at(f.qkv_at(b, i, t, 1, c)), dk, 1e-12) << b << " " << t << " " << i << " " << c;
          ASSERT_NEAR(dqkv.at(f.qkv_at(b, i, t, 2, c)), dv, 1e-12) << b << " " << t << " " << i << " " << c;
        }
      }
  // Every element of dqkv was written (none left NaN): the three parts tile it.
  for (double x : f.bufs[AttnBuf::dqkv]) ASSERT_FALSE(std::isnan(x));
}

TEST(AttentionTrainProducts, OffsetsOfTheLastSequenceStayExactPast32Bits) {
  const AttnDims s{.batch = 64, .seq = 2048, .heads = 32, .head_dim = 128, .scale = 1.0f};
  const auto g = attn_product(s, AttnStep::scores, 63);
  EXPECT_EQ(g.c.offset, std::int64_t{63} * 32 * 2048 * 2048);  // above 2^31
  EXPECT_EQ(g.a.offset, std::int64_t{63} * 2048 * 3 * 4096 + 4096);
  EXPECT_EQ(g.batch_count, 32);
}
