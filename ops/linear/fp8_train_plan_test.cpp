// cublaslt_fp8_train's device-free decisions (fp8_train_plan.hpp): scales from amax, the three TN
// GEMMs and their transposed copies (multiplied out here on the CPU against the step's math),
// scale modes, what a case and a device support, and the check's tolerance against simulated
// fp8 dot products.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "opmeter/dtype.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/fp8_train_plan.hpp"

using namespace opmeter;
using namespace opmeter::linear;
using namespace opmeter::linear::fp8_train;

namespace {
Case train_case(const std::string& shape, const std::string& quant = "float8dq-tensor",
                const std::string& dtype = "bf16") {
  return parse_case("linear/cublaslt_fp8_train/" + dtype + "/" + shape + ",act=none,quant=" + quant +
                    ",mode=train/device=cuda:0");
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// v rounded to nearest with `mantissa` stored bits (normal range only), as an fp8 cast does.
double round_mantissa(double v, int mantissa) {
  if (v == 0) return 0;
  int e = 0;
  std::frexp(v, &e);  // v = f 2^e, 0.5 <= |f| < 1
  const double ulp = std::ldexp(1.0, e - 1 - mantissa);
  return std::nearbyint(v / ulp) * ulp;
}
}  // namespace

TEST(Fp8TrainPlan, AmaxLandsOnTheFormatsLargestValue) {
  for (float amax : {1e-3f, 0.75f, 3.0f, 1e4f}) {
    const float s = scale_from_amax(amax, kE4m3Max);
    EXPECT_FLOAT_EQ(amax / s, 448.0f);
    EXPECT_EQ(from_fp8_e4m3(to_fp8_e4m3(amax / s)), 448.0f);  // the largest code, not saturated past it
    EXPECT_FLOAT_EQ(amax / scale_from_amax(amax, kE5m2Max), 57344.0f);
  }
  EXPECT_EQ(scale_from_amax(0.0f, kE4m3Max), 1.0f);
  EXPECT_EQ(scale_from_amax(std::numeric_limits<float>::infinity(), kE4m3Max), 1.0f);
  EXPECT_EQ(scale_from_amax(std::numeric_limits<float>::quiet_NaN(), kE4m3Max), 1.0f);
  EXPECT_EQ(max_finite(Format::e4m3), 448.0f);
  EXPECT_EQ(max_finite(Format::e5m2), 57344.0f);
}

TEST(Fp8TrainPlan, TheThreeTnGemmsComputeTheStepsProducts) {
  const Shape s{.rows = 3, .hidden = 5, .out = 4, .act = tensor::Act::none, .layernorm = false};
  std::mt19937 rng(7);
  std::normal_distribution<double> g;
  auto random = [&](std::size_t n) {
    std::vector<double> v(n);
    for (auto& e : v) e = g(rng);
    return v;
  };
  auto transpose = [](const std::vector<double>& m, std::size_t r, std::size_t c) {
    std::vector<double> t(m.size());
    for (std::size_t i = 0; i < r; ++i)
      for (std::size_t j = 0; j < c; ++j) t[j * r + i] = m[i * c + j];
    return t;
  };
  const auto x = random(s.rows * s.hidden), w = random(s.out * s.hidden), dz = random(s.rows * s.out);
  std::map<std::string, std::vector<double>> stored = {{"x", x},
                                                       {"W", w},
                                                       {"dz", dz},
                                                       {"W^T", transpose(w, s.out, s.hidden)},
                                                       {"dz^T", transpose(dz, s.rows, s.out)},
                                                       {"x^T", transpose(x, s.rows, s.hidden)}};
  // The step's products straight from their definitions.
  auto expected = [&](const std::string& gemm, std::size_t m, std::size_t n) {
    double v = 0;
    if (gemm == "forward")  // z = x W^T
      for (std::size_t k = 0; k < s.hidden; ++k) v += x[m * s.hidden + k] * w[n * s.hidden + k];
    if (gemm == "dgrad")  // dx = dz W
      for (std::size_t j = 0; j < s.out; ++j) v += dz[m * s.out + j] * w[j * s.hidden + n];
    if (gemm == "wgrad")  // dW = dz^T x
      for (std::size_t r = 0; r < s.rows; ++r) v += dz[r * s.out + m] * x[r * s.hidden + n];
    return v;
  };
  const auto gemms = step_gemms(s, false);
  ASSERT_EQ(gemms.size(), 3u);
  int copies = 0;
  for (auto& gm : gemms) {
    EXPECT_EQ(gm.a.rows, gm.M) << gm.name;
    EXPECT_EQ(gm.b.rows, gm.N) << gm.name;
    EXPECT_EQ(gm.a.ld, gm.K) << gm.name;
    EXPECT_EQ(gm.b.ld, gm.K) << gm.name;
    EXPECT_EQ(gm.a.format, gm.name == "forward" ? Format::e4m3 : Format::e5m2) << gm.name;
    EXPECT_EQ(gm.b.format, Format::e4m3) << gm.name;
    copies += gm.a.transposed_copy + gm.b.transposed_copy;
    const auto& A = stored.at(gm.a.name);
    const auto& B = stored.at(gm.b.name);
    ASSERT_EQ(A.size(), gm.a.rows * gm.a.ld) << gm.a.name;
    ASSERT_EQ(B.size(), gm.b.rows * gm.b.ld) << gm.b.name;
    for (std::size_t m = 0; m < gm.M; ++m)
      for (std::size_t n = 0; n < gm.N; ++n) {
        double d = 0;  // TN: D = A B^T, both K-contiguous
        for (std::size_t k = 0; k < gm.K; ++k) d += A[m * gm.a.ld + k] * B[n * gm.b.ld + k];
        EXPECT_NEAR(d, expected(gm.name, m, n), 1e-12) << gm.name << " [" << m << ", " << n << "]";
      }
  }
  EXPECT_EQ(copies, 3);  // W^T, dz^T and x^T, as torchao makes them
  // Rowwise: e4m3 gradients, as torchao's rowwise recipe.
  for (auto& gm : step_gemms(s, true)) EXPECT_EQ(gm.a.format, Format::e4m3) << gm.name;
}

TEST(Fp8TrainPlan, GranularityPicksTheScaleMode) {
  Float8Knobs k;
  EXPECT_EQ(scale_mode(k), ScaleMode::tensor);
  k.rowwise = true;
  EXPECT_EQ(scale_mode(k), ScaleMode::outer_vector);
  const auto gemms =
      step_gemms({.rows = 32, .hidden = 64, .out = 48, .act = tensor::Act::none, .layernorm = false}, true);
  EXPECT_EQ(scale_count(ScaleMode::tensor, gemms[2].a), 1u);
  EXPECT_EQ(scale_count(ScaleMode::outer_vector, gemms[0].a), 32u);  // one per token
  EXPECT_EQ(scale_count(ScaleMode::outer_vector, gemms[0].b), 48u);  // one per output channel
  EXPECT_EQ(scale_count(ScaleMode::outer_vector, gemms[2].a), 48u);  // dz^T: one per output channel
  EXPECT_EQ(scale_count(ScaleMode::outer_vector, gemms[1].b), 64u);  // W^T: one per input feature
}

TEST(Fp8TrainPlan, CaseSupportNamesWhatIsMissing) {
  EXPECT_TRUE(case_support(train_case("batch=2,seq=16,hidden=64,out=48")).ok);
  EXPECT_TRUE(case_support(train_case("batch=2,seq=16,hidden=64,out=48", "float8dq-row")).ok);
  auto r = case_support(train_case("batch=2,seq=16,hidden=64,out=48", "int8dq"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "quant=int8dq")) << r.reason;
  r = case_support(train_case("batch=2,seq=16,hidden=64,out=48", "float8dq-tensor", "fp16"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "bf16")) << r.reason;
  r = case_support(train_case("batch=2,seq=16,hidden=40,out=48"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "hidden") && has(r.reason, "40")) << r.reason;
  r = case_support(train_case("batch=1,seq=9,hidden=64,out=48"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "rows")) << r.reason;
}

TEST(Fp8TrainPlan, DeviceSupportRefusesOldGpusAndRowwiseBeforeHopper) {
  auto r = device_support(86, false, "RTX 3090");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "8.9") && has(r.reason, "8.6")) << r.reason;
  EXPECT_TRUE(device_support(89, false, "L4").ok);
  r = device_support(89, true, "L4");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "OUTER_VEC_32F")) << r.reason;
  EXPECT_TRUE(device_support(90, true, "H100").ok);
}

// The tolerance holds for simulated e5m2 x e4m3 dot products with dynamic scales (the worst GEMM
// of the step), measured as the check measures it, and is far below a wrong operand's error.
TEST(Fp8TrainPlan, ToleranceBoundsSimulatedFp8DotProducts) {
  std::mt19937 rng(11);
  std::normal_distribution<double> g;
  const std::size_t K = 256;
  const double tol = tolerance(false, K, Format::e5m2);
  EXPECT_GT(tol, 0x1p-3 + 0x1p-4);  // at least the two casts' rounding
  EXPECT_LT(tol, 0.25);
  EXPECT_GT(tolerance(true, K, Format::e5m2), tol);   // fast accumulation loosens it
  EXPECT_LT(tolerance(false, K, Format::e4m3), tol);  // e4m3 gradients (rowwise) tighten it
  EXPECT_LT(forward_error(false, K), tol);            // e4m3 x e4m3 is the tighter GEMM
  double worst = 0, wrong = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> a(K), b(K);
    double amax_a = 0, amax_b = 0;
    for (std::size_t k = 0; k < K; ++k) {
      a[k] = g(rng) * 1e-3;  // gradients: small
      b[k] = g(rng);
      amax_a = std::max(amax_a, std::fabs(a[k]));
      amax_b = std::max(amax_b, std::fabs(b[k]));
    }
    const double sa = scale_from_amax(float(amax_a), kE5m2Max), sb = scale_from_amax(float(amax_b), kE4m3Max);
    double exact = 0, got = 0, mag = 0, swapped = 0;
    for (std::size_t k = 0; k < K; ++k) {
      exact += a[k] * b[k];
      mag += std::fabs(a[k] * b[k]);
      got += round_mantissa(a[k] / sa, 2) * sa * round_mantissa(b[k] / sb, 3) * sb;
      swapped += a[k] * b[K - 1 - k];
    }
    worst = std::max(worst, std::fabs(got - exact) / mag);
    wrong = std::max(wrong, std::fabs(swapped - exact) / mag);
  }
  EXPECT_LE(worst, tol);
  // A misplaced operand: its largest error over as many elements as the check samples is
  // beyond the tolerance, well beyond the fp8 step's own.
  EXPECT_GT(wrong, tol);
  EXPECT_GT(wrong, 4 * worst);
}

// % of peak: a float8 step's GEMMs run on fp8 tensor cores, so fp8's peak is its ceiling on a GPU
// (against bf16's it would read above 100%); the bf16 step and CPU cases keep their dtype's, but
// int8dq, whose GEMM runs on int8 dot products on the CPU too.
TEST(Fp8TrainPlan, Float8CasesOnAGpuAreMeasuredAgainstTheFp8Peak) {
  auto peak = Registry::global().op("linear")->peak_dtype;
  ASSERT_TRUE(peak);
  EXPECT_EQ(peak(train_case("batch=2,seq=16,hidden=64,out=48")), DType::fp8_e4m3);
  EXPECT_EQ(peak(train_case("batch=2,seq=16,hidden=64,out=48", "float8dq-row")), DType::fp8_e4m3);
  EXPECT_EQ(peak(train_case("batch=2,seq=16,hidden=64,out=48", "int8dq")), DType::int8);
  EXPECT_EQ(peak(train_case("batch=2,seq=16,hidden=64,out=48", "int4wo-64")), DType::bf16);  // weight-only: bf16 math
  EXPECT_EQ(
      peak(parse_case("linear/cublaslt_train/bf16/batch=2,seq=16,hidden=64,out=48,act=none,mode=train/device=cuda:0")),
      DType::bf16);
  EXPECT_EQ(peak(parse_case(
                "linear/reference/bf16/batch=2,seq=16,hidden=64,out=48,act=none,quant=float8dq-tensor/threads=1")),
            DType::bf16);
  EXPECT_EQ(peak(parse_case("linear/opmeter_quant/fp32/batch=1,seq=4,hidden=1024,out=64,act=none,quant=int8dq/threads=1")),
            DType::int8);
  EXPECT_EQ(peak(parse_case("linear/opmeter_quant/fp32/batch=1,seq=4,hidden=1024,out=64,act=none,quant=int8wo/threads=1")),
            DType::fp32);
}
