// The attention backward's oneDNN products (self_attention_backward.cpp) against the same
// gradients written as plain fp64 loops here, causal or not, its heads in one group or split
// into groups of 3 with a remainder (the buffers and primitives reused across groups); in fp32,
// and in bf16 (operands as stored, P and dS rounded to bf16) within the rounding it adds.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"

#include <cmath>
#include <random>
#include <vector>

#include "ops/transformer/self_attention_backward.hpp"

using namespace opmeter;
using namespace opmeter::transformer;

namespace {
// Plain fp64: per (b, head) P = softmax(q k^T scale) (masked), o = P v is given, then
// dv = P^T do, dP = do v^T, dS = P (dP - rowsum(do o)) scale, dq = dS k, dk = dS^T q; mag: the
// sum of the |terms| of each gradient's last sum.
std::vector<double> expected(const Shape& s, const std::vector<float>& qkv, const std::vector<float>& o,
                             const std::vector<float>& dout, std::vector<double>* mag = nullptr) {
  const std::size_t n = s.seq, d = s.head_dim(), h = s.hidden;
  std::vector<double> g(qkv.size(), 0.0), m(qkv.size(), 0.0);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t hd = 0; hd < s.heads; ++hd) {
      auto at = [&](std::size_t i, std::size_t part, std::size_t c) { return (b * n + i) * 3 * h + part * h + hd * d + c; };
      auto oat = [&](std::size_t i, std::size_t c) { return (b * n + i) * h + hd * d + c; };
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t keys = s.causal ? i + 1 : n;
        std::vector<double> p(keys);
        double mx = -INFINITY, sum = 0, dd = 0;
        for (std::size_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (std::size_t c = 0; c < d; ++c) dot += double(qkv[at(i, 0, c)]) * qkv[at(j, 1, c)];
          p[j] = dot * s.scale();
          mx = std::max(mx, p[j]);
        }
        for (auto& v : p) sum += v = std::exp(v - mx);
        for (std::size_t c = 0; c < d; ++c) dd += double(dout[oat(i, c)]) * o[oat(i, c)];
        for (std::size_t j = 0; j < keys; ++j) {
          const double pj = p[j] / sum;
          double dp = 0;
          for (std::size_t c = 0; c < d; ++c) dp += double(dout[oat(i, c)]) * qkv[at(j, 2, c)];
          const double ds = pj * (dp - dd) * s.scale();
          for (std::size_t c = 0; c < d; ++c) {
            g[at(i, 0, c)] += ds * qkv[at(j, 1, c)];
            g[at(j, 1, c)] += ds * qkv[at(i, 0, c)];
            g[at(j, 2, c)] += pj * dout[oat(i, c)];
            m[at(i, 0, c)] += std::fabs(ds * qkv[at(j, 1, c)]);
            m[at(j, 1, c)] += std::fabs(ds * qkv[at(i, 0, c)]);
            m[at(j, 2, c)] += std::fabs(pj * dout[oat(i, c)]);
          }
        }
      }
    }
  if (mag) *mag = m;
  return g;
}

std::vector<float> bf16_rounded(std::vector<float> v) {
  for (auto& x : v) x = from_bf16(to_bf16(x));
  return v;
}
}  // namespace

TEST(SelfAttentionBackward, OnednnProductsMatchPlainLoopsInOneGroupOrSeveral) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (bool causal : {false, true}) {
    const Shape s{.batch = 2, .seq = 5, .hidden = 16, .heads = 2, .mlp = 64, .act = tensor::Act::none, .causal = causal};
    std::vector<float> qkv(s.rows() * 3 * s.hidden), o(s.rows() * s.hidden), dout(o.size());
    for (auto* v : {&qkv, &o, &dout})
      for (auto& x : *v) x = u(rng);
    const auto want = expected(s, qkv, o, dout);
    // 600 bytes: 3 heads of 2 x 5 x 5 floats per group, then a group of 1.
    for (std::size_t bytes : {SelfAttentionBackward::kScoresBytes, std::size_t(600)}) {
      SelfAttentionBackward bwd;
      bwd.prepare(s, tensor::Elems{false}, 1, bytes);
      std::vector<float> got(qkv.size(), NAN);
      bwd.run(s, qkv.data(), o.data(), dout.data(), got.data());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i])))
            << "element " << i << (causal ? " causal" : "") << ", group of " << SelfAttentionBackward::group_size(s, tensor::Elems{false}, bytes);
    }
  }
  EXPECT_EQ(SelfAttentionBackward::group_size({2, 5, 16, 2, 64, tensor::Act::none, false}, tensor::Elems{false}, 600), 3u);
}

// bf16: the inputs are bf16 values; the five products read bf16 operands. Against fp64 on the
// same (bf16) inputs the error of a gradient is at most u |terms| from rounding P (dv) or dS (dq,
// dk): each term of its last sum carries one such rounding, relative u = 2^-8 (bf16's unit
// roundoff); u |value| <= u |terms| from storing it in bf16; and the fp32 work (softmax, dP,
// accumulation), a few 2^-24 n: so 2 u of mag, with 2^-16 of slack for the fp32 part at n = 5.
TEST(SelfAttentionBackward, Bf16ProductsMatchPlainLoopsWithinTheirRounding) {
  REQUIRE_ONEDNN_BF16();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const tensor::Elems bf{true};
  for (bool causal : {false, true}) {
    const Shape s{.batch = 2, .seq = 5, .hidden = 16, .heads = 2, .mlp = 64, .act = tensor::Act::none, .causal = causal};
    std::vector<float> qkv(s.rows() * 3 * s.hidden), o(s.rows() * s.hidden), dout(o.size());
    for (auto* v : {&qkv, &o, &dout})
      for (auto& x : *v) x = u(rng);
    qkv = bf16_rounded(qkv), o = bf16_rounded(o), dout = bf16_rounded(dout);
    std::vector<double> mag;
    const auto want = expected(s, qkv, o, dout, &mag);
    auto to16 = [](const std::vector<float>& v) {
      std::vector<std::uint16_t> r(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) r[i] = to_bf16(v[i]);
      return r;
    };
    const auto qkv16 = to16(qkv), o16 = to16(o), dout16 = to16(dout);
    for (std::size_t bytes : {SelfAttentionBackward::kScoresBytes, std::size_t(900)}) {
      SelfAttentionBackward bwd;
      bwd.prepare(s, bf, 1, bytes);
      std::vector<std::uint16_t> got(qkv.size(), 0x7fc0);  // NaN until written
      bwd.run(s, qkv16.data(), o16.data(), dout16.data(), got.data());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_LE(std::fabs(from_bf16(got[i]) - want[i]), (2 * 0x1p-8 + 0x1p-16) * mag[i])
            << "element " << i << (causal ? " causal" : "") << ": got " << from_bf16(got[i]) << ", expected " << want[i]
            << ", group of " << SelfAttentionBackward::group_size(s, bf, bytes);
    }
  }
  // 900 bytes: a head's scores are 5 x 5 x (2 fp32 + 2 bf16) = 300 bytes in bf16.
  EXPECT_EQ(SelfAttentionBackward::group_size({2, 5, 16, 2, 64, tensor::Act::none, false}, bf, 900), 3u);
}
