// transformer_block: the reference against a plain computation, the check catching wrong
// results, both CPU impls on odd shapes and both dtypes, parameter errors, the work model.
#include <gtest/gtest.h>

#include "tests/onednn_caps.hpp"

#include <cmath>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/transformer/transformer_block.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

// The block written out plainly, in fp64, for every row (pre-LN, heads side by side, gelu); eps
// and the attention scale are the fp32 constants every impl uses.
std::vector<double> plain_block(const HostTensors& in, std::size_t batch, std::size_t seq, std::size_t h,
                                std::size_t heads, std::size_t mlp, bool causal) {
  const std::size_t rows = batch * seq, d = h / heads;
  auto ln = [&](const std::vector<double>& x, std::size_t g, std::size_t b) {
    std::vector<double> y(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (std::size_t c = 0; c < h; ++c) mean += x[r * h + c] / double(h);
      for (std::size_t c = 0; c < h; ++c) var += (x[r * h + c] - mean) * (x[r * h + c] - mean) / double(h);
      for (std::size_t c = 0; c < h; ++c)
        y[r * h + c] = (x[r * h + c] - mean) / std::sqrt(var + double(1e-5f)) * in[g][c] + in[b][c];
    }
    return y;
  };
  auto dense = [&](const std::vector<double>& x, std::size_t k, std::size_t w, std::size_t b, std::size_t n) {
    std::vector<double> y(rows * n);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < n; ++j) {
        double s = in[b][j];
        for (std::size_t i = 0; i < k; ++i) s += x[r * k + i] * in[w][j * k + i];
        y[r * n + j] = s;
      }
    return y;
  };
  std::vector<double> x(rows * h);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = in[0][i];
  auto qkv = dense(ln(x, 1, 2), h, 3, 4, 3 * h);
  std::vector<double> o(rows * h, 0.0);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t hd = 0; hd < heads; ++hd)
      for (std::size_t i = 0; i < seq; ++i) {
        std::vector<double> p(seq, 0.0);
        double mx = -1e300, sum = 0;
        for (std::size_t j = 0; j < seq; ++j) {
          if (causal && j > i) continue;
          double s = 0;
          for (std::size_t c = 0; c < d; ++c)
            s += qkv[(b * seq + i) * 3 * h + hd * d + c] * qkv[(b * seq + j) * 3 * h + h + hd * d + c];
          p[j] = s * double(1.0f / std::sqrt(float(d)));  // the scale as the kernels use it, in fp32
          mx = std::max(mx, p[j]);
        }
        for (std::size_t j = 0; j < seq; ++j) sum += p[j] = (causal && j > i) ? 0.0 : std::exp(p[j] - mx);
        for (std::size_t j = 0; j < seq; ++j)
          for (std::size_t c = 0; c < d; ++c)
            o[(b * seq + i) * h + hd * d + c] += p[j] / sum * qkv[(b * seq + j) * 3 * h + 2 * h + hd * d + c];
      }
  auto attn = dense(o, h, 5, 6, h);
  std::vector<double> hres(rows * h);
  for (std::size_t i = 0; i < hres.size(); ++i) hres[i] = x[i] + attn[i];
  auto u = dense(ln(hres, 7, 8), h, 9, 10, mlp);
  for (auto& v : u) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  auto f = dense(u, mlp, 11, 12, h);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] += hres[i];
  return f;
}

struct Spec {
  transformer::TransformerBlockOp op;
  HostTensors in;
};
Spec spec_of(const std::string& kase, std::uint64_t seed = 5) {
  Spec s;
  s.op.bind(parse_case(kase));
  s.in = s.op.make_inputs(seed);
  return s;
}

// The output of `reference` (same inputs), rounded to `spec`'s output type.
HostTensor output_of(const Spec& spec, const transformer::TransformerBlockOp& reference) {
  HostTensor out(spec.op.output());
  std::vector<std::size_t> all(spec.op.out_rows());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = r;
  const std::size_t cols = spec.op.out_cols();
  reference.reference_rows(spec.in, all, [&](std::size_t r, const double* ref, const double*) {
    for (std::size_t c = 0; c < cols; ++c) store(out.desc().elem, out.data(), r * cols + c, ref[c]);
  });
  return out;
}

}  // namespace

TEST(TransformerBlock, ReferenceEqualsAPlainComputation) {
  for (bool causal : {false, true}) {
    auto kase = fmt::format("transformer_block/reference/fp32/batch=2,seq=5,hidden=6,heads=2,mlp=7,act=gelu,causal={}"
                            "/threads=2", int(causal));
    auto spec = spec_of(kase);
    auto plain = plain_block(spec.in, 2, 5, 6, 2, 7, causal);
    const std::size_t cols = 6;
    int rows = 0;
    std::vector<std::size_t> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    spec.op.reference_rows(spec.in, all, [&](std::size_t r, const double* ref, const double* mag) {
      for (std::size_t c = 0; c < cols; ++c) {
        EXPECT_NEAR(ref[c], plain[r * cols + c], 1e-12) << kase << " row " << r << " col " << c;
        EXPECT_GE(mag[c], std::fabs(ref[c])) << "a scale is at least the value's size";
      }
#pragma omp atomic
      ++rows;
    });
    EXPECT_EQ(rows, 10);
    double one[6], one_mag[6];  // reference_row alone agrees
    spec.op.reference_row(spec.in, 7, one, one_mag);
    for (std::size_t c = 0; c < cols; ++c) EXPECT_NEAR(one[c], plain[7 * cols + c], 1e-12);
  }
}

TEST(TransformerBlock, CheckPassesTheReferenceAndCatchesAWrongMaskOrAMissingBranch) {
  for (const char* dtype : {"fp32", "bf16"}) {
    auto shape = [&](int causal) {
      return fmt::format("transformer_block/opmeter/{}/batch=2,seq=37,hidden=48,heads=3,mlp=80,act=gelu,causal={}/threads=2",
                         dtype, causal);
    };
    auto causal = spec_of(shape(1));
    auto right = output_of(causal, causal.op);
    auto ok = causal.op.check(causal.in, right, 3);
    EXPECT_TRUE(ok.ok) << dtype << ": " << ok.detail;

    transformer::TransformerBlockOp unmasked;  // the same inputs through a block without the mask
    unmasked.bind(parse_case(shape(0)));
    auto wrong = causal.op.check(causal.in, output_of(causal, unmasked), 3);
    EXPECT_FALSE(wrong.ok) << dtype << ": a missing causal mask passed: " << wrong.detail;

    // y - x: the residual around attention forgotten.
    HostTensor no_residual = output_of(causal, causal.op);
    for (std::size_t i = 0; i < no_residual.desc().count; ++i)
      store(no_residual.desc().elem, no_residual.data(), i, no_residual[i] - causal.in[0][i]);
    auto bad = causal.op.check(causal.in, no_residual, 3);
    EXPECT_FALSE(bad.ok) << dtype << ": a missing residual passed: " << bad.detail;

    right.poison();
    EXPECT_FALSE(causal.op.check(causal.in, right, 3).ok);
  }
}

TEST(TransformerBlock, CheckSamplesAFewRowsOfOneOrTwoSequences) {
  auto small = spec_of("transformer_block/opmeter/fp32/batch=3,seq=100,hidden=48,heads=3,mlp=0,act=gelu,causal=0/threads=1");
  auto rows = small.op.check_rows(9);
  EXPECT_LE(rows.size(), 16u);
  EXPECT_GE(rows.size(), 10u);
  for (auto r : rows) EXPECT_TRUE(r / 100 == 0 || r / 100 == 2) << r;  // the first and the last sequence
  transformer::TransformerBlockOp big;
  big.bind(parse_case("transformer_block/opmeter/fp32/batch=4,seq=2048,hidden=1024,heads=16,mlp=0,act=gelu,causal=0/threads=1"));
  for (auto r : big.check_rows(9)) EXPECT_LT(r, 2048u) << "one sequence when a sequence's keys are costly";
  EXPECT_LE(big.check_rows(9).size(), 8u);
}

TEST(TransformerBlock, ImplsMatchTheReferenceInBothDtypesOnOddShapes) {
  for (const char* impl : {"opmeter", "onednn_unfused"})
    for (const char* dtype : {"fp32", "bf16"})
      for (const char* shape : {"batch=1,seq=1,hidden=39,heads=3,mlp=0,act=gelu,causal={}",
                                "batch=2,seq=37,hidden=48,heads=3,mlp=80,act=gelu,causal={}",
                                "batch=1,seq=150,hidden=26,heads=13,mlp=19,act=silu,causal={}"})
        for (int causal : {0, 1}) {
          auto kase = fmt::format("transformer_block/{}/{}/{}/threads=2", impl, dtype, fmt::format(fmt::runtime(shape), causal));
          auto r = run_case(parse_case(kase), quick_options(2));
          if (opmeter::testing::skipped_for_want_of_onednn_bf16(r, /*both run oneDNN's matmul*/ true, std::string(dtype) == "bf16"))
            continue;
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
          EXPECT_GT(*r.max_error, 0) << kase << ": exact agreement means the check compared nothing";
        }
}

TEST(TransformerBlock, BadParametersSayWhich) {
  try {
    validate_case(parse_case("transformer_block/opmeter/fp32/batch=1,seq=8,hidden=50,heads=12,mlp=0,act=gelu,causal=0/threads=1"));
    FAIL() << "hidden=50 with heads=12 accepted";
  } catch (const CaseError& e) {
    EXPECT_STREQ(e.what(), "transformer_block hidden=50 is not divisible by heads=12: each head takes hidden / heads columns");
  }
  EXPECT_THROW(validate_case(parse_case(
                   "transformer_block/opmeter/fp32/batch=1,seq=8,hidden=48,heads=3,mlp=0,act=swishy,causal=0/threads=1")),
               CaseError);
  EXPECT_THROW(validate_case(parse_case(
                   "transformer_block/opmeter/fp32/batch=1,seq=8,hidden=48,heads=3,mlp=0,act=gelu,causal=2/threads=1")),
               CaseError);
  auto out = cli("run --case transformer_block/opmeter/fp32/batch=1,seq=8,hidden=50,heads=12,mlp=0,act=gelu,causal=0/threads=1");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("hidden=50 is not divisible by heads=12"), std::string::npos) << out.text;
}

TEST(TransformerBlock, WorkModelOfBertBase) {
  const OpDef* op = Registry::global().op("transformer_block");
  ASSERT_NE(op, nullptr);
  auto c = parse_case("transformer_block/opmeter/fp32/batch=1,seq=512,hidden=768,heads=12,mlp=0,act=gelu,causal=0/threads=1");
  auto w = op->work(c);
  // projections 2*512*768*(2304 + 768) + 4*512*768*3072, attention 12*(4*512^2*64 + 5*512^2),
  // LayerNorms, biases, gelu (5 per element), residuals.
  EXPECT_DOUBLE_EQ(w.flops, 8086487040.0);
  // x and the weights, then the fp32 vectors: ln1 gamma, beta; bqkv; bo; ln2 gamma, beta; b1; b2.
  EXPECT_DOUBLE_EQ(w.bytes_read, (512.0 * 768 + 768.0 * 9216) * 4 + (2 * 768 + 3 * 768 + 768 + 2 * 768 + 3072 + 768) * 4);
  EXPECT_DOUBLE_EQ(w.bytes_written, 512.0 * 768 * 4);
  auto u = op->unfused_work(c);
  EXPECT_DOUBLE_EQ(u.flops, w.flops);
  // Unfused: 16 ops, each reading its inputs from memory and writing its output there. With
  // rows r = 512, hidden h = 768, mlp m = 3072, e = 4 B: X = r h e is one activation of width h,
  // M = r m e one of width m, S = 12 heads x 512^2 elements of one head's scores or probabilities.
  const double r = 512, h = 768, m = 3072, e = 4, X = r * h * e, M = r * m * e, S = 12.0 * 512 * 512;
  // Activations read, by op: LN1 x (1 X); qkv matmul its input (1); + bqkv q, k, v (3); S = q k^T
  // q and k (2); P v v (1); O Wo^T O (1); + bo (1); h = x + attn both (2); LN2 (1); W1 (1);
  // + b2 (1); y = h + mlp both (2): 17 X. Width m: + b1, act and W2 each read one: 3 M.
  // Scores: softmax reads S in fp32 and P v reads P in the case's type: S x (4 + e).
  // Weights once, e bytes each: Wqkv 3 h^2, Wo h^2, W1 and W2 m h each. fp32 vectors: LN1's and
  // LN2's gamma and beta (2 x 2 h), bqkv (3 h), bo (h), b1 (m), b2 (h): 4 x (9 h + m) bytes.
  const double weights = (3 * h * h + h * h + 2 * m * h) * e, vectors = 4 * (9 * h + m);
  EXPECT_DOUBLE_EQ(u.bytes_read, 17 * X + 3 * M + S * (4 + e) + weights + vectors);  // 99130368
  // Written, by op: LN1 (1 X), qkv (3), + bqkv (3), S in fp32 (S x 4), P (S x e), P v (1), Wo (1),
  // + bo (1), residual (1), LN2 (1), W2 (1), + b2 (1), residual (1): 15 X; W1, + b1, act: 3 M.
  EXPECT_DOUBLE_EQ(u.bytes_written, 15 * X + 3 * M + S * (4 + e));  // 67633152
  EXPECT_EQ(op->fusion_pattern(c), "layernorm+qkv+attention+proj+add+layernorm+linear+bias+gelu+linear+add");
  auto bf = op->work(parse_case("transformer_block/opmeter/bf16/batch=1,seq=512,hidden=768,heads=12,mlp=3072,act=gelu,causal=1/threads=1"));
  EXPECT_DOUBLE_EQ(bf.bytes_written, 512.0 * 768 * 2);
  EXPECT_DOUBLE_EQ(bf.flops, w.flops) << "mlp=0 is 4*hidden; causal counts the full square";
}
