// Quantization recipes: names, the canonical weight layout read back exactly, activations, HQQ
// against round-to-nearest, SQNR.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <random>

#include "opmeter/dtype.hpp"
#include "ops/linear/quant/quantize.hpp"

using namespace opmeter;
using namespace opmeter::quant;

namespace {
std::vector<float> gaussian(std::size_t n, std::uint64_t seed, float sd = 1) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

double weight_sqnr(const QuantizedWeights& q, const std::vector<float>& w) {
  Sqnr s;
  for (std::size_t j = 0; j < q.out; ++j)
    for (std::size_t k = 0; k < q.hidden; ++k) s.add(q.weight(j, k), w[j * q.hidden + k]);
  return s.db();
}
}  // namespace

TEST(QuantRecipe, NamesParseAndProblemsAreNamed) {
  EXPECT_EQ(recipe_names().front(), "baseline");
  for (auto& name : recipe_names()) ASSERT_TRUE(parse_recipe(name)) << name;
  EXPECT_FALSE(parse_recipe("int4wo-48"));
  auto r = *parse_recipe("hqq-int4-64");
  EXPECT_TRUE(r.hqq);
  EXPECT_EQ(r.group, 64u);
  EXPECT_EQ(r.weight_bits(), 4);
  EXPECT_TRUE(r.weight_only());
  EXPECT_NE(recipe_problem(r, 96).find("does not divide hidden=96"), std::string::npos);
  EXPECT_EQ(recipe_problem(r, 128), "");
  EXPECT_NE(recipe_problem(*parse_recipe("int8dq"), 200000).find("overflow"), std::string::npos);
  EXPECT_TRUE(trains(*parse_recipe("float8dq-row")));
  EXPECT_FALSE(trains(*parse_recipe("int8wo")));
  EXPECT_TRUE(parse_recipe("float8dq-tensor")->dynamic());
}

TEST(QuantWeights, Int8PerChannelRoundsWithinHalfAStep) {
  auto w = gaussian(8 * 96, 1);
  auto q = quantize_weights(*parse_recipe("int8wo"), w.data(), 8, 96, Elem::f32);
  ASSERT_EQ(q.scales.size(), 8u);
  for (std::size_t j = 0; j < 8; ++j) {
    float amax = 0;
    for (std::size_t k = 0; k < 96; ++k) amax = std::max(amax, std::fabs(w[j * 96 + k]));
    EXPECT_FLOAT_EQ(q.scales[j], amax / 127);
    for (std::size_t k = 0; k < 96; ++k) {
      EXPECT_EQ(q.weight(j, k), double(static_cast<std::int8_t>(q.codes[j * 96 + k])) * q.scales[j]);
      EXPECT_LE(std::fabs(q.weight(j, k) - w[j * 96 + k]), 0.5 * q.scales[j] * (1 + 1e-6));
    }
  }
}

TEST(QuantWeights, Int4LayoutNibblesAndBf16Scales) {
  auto w = gaussian(4 * 128, 2);
  auto q = quantize_weights(*parse_recipe("int4wo-32"), w.data(), 4, 128, Elem::bf16);
  ASSERT_EQ(q.codes.size(), 4u * 128 / 2);
  ASSERT_EQ(q.scales.size(), 4u * 4);
  for (float s : q.scales) EXPECT_EQ(s, from_bf16(to_bf16(s)));  // bf16 values
  for (float z : q.zeros) EXPECT_EQ(z, std::nearbyint(z));        // round-to-nearest: integer zeros
  // Weight (1, 5): odd k, high nibble of byte (128 + 5) / 2.
  const std::size_t i = 128 + 5, g = 1 * 4 + 0;
  const int code = q.codes[i / 2] >> 4;
  EXPECT_EQ(q.weight(1, 5), (code - double(q.zeros[g])) * q.scales[g]);
  for (std::size_t j = 0; j < 4; ++j)
    for (std::size_t k = 0; k < 128; ++k)
      EXPECT_LE(std::fabs(q.weight(j, k) - w[j * 128 + k]), 0.51 * q.scales[j * 4 + k / 32]) << j << "," << k;
}

TEST(QuantWeights, Fp8PerRowAndPerTensorSaturateAtTheirScale) {
  std::vector<float> w = {1, -2, 0.5f, 4, 0.25f, 0.125f, -8, 1};
  auto row = quantize_weights(*parse_recipe("float8wo"), w.data(), 2, 4, Elem::f32);
  ASSERT_EQ(row.scales.size(), 2u);
  EXPECT_FLOAT_EQ(row.scales[0], 4.f / 448);
  EXPECT_EQ(row.weight(0, 3), 448.0 * double(row.scales[0]));  // amax maps to the largest code
  EXPECT_NEAR(row.weight(0, 3), 4, 1e-6);
  auto tensor = quantize_weights(*parse_recipe("float8dq-tensor"), w.data(), 2, 4, Elem::f32);
  ASSERT_EQ(tensor.scales.size(), 1u);
  EXPECT_FLOAT_EQ(tensor.scales[0], 8.f / 448);
  EXPECT_NEAR(tensor.weight(1, 2), -8, 1e-6);
}

TEST(QuantActivations, PerTokenInt8PerTensorFp8AndZeroRows) {
  std::vector<float> x = {0, 0, 0, 0, 1, -0.5f, 0.25f, 2};
  std::vector<std::uint8_t> codes(8);
  std::vector<float> scales(2);
  auto int8 = *parse_recipe("int8dq");
  quantize_activations(int8, x.data(), 2, 4, codes.data(), scales.data());
  EXPECT_EQ(scales[0], 1.f);  // an all-zero row
  EXPECT_FLOAT_EQ(scales[1], 2.f / 127);
  EXPECT_EQ(activation_code_value(int8, codes[7]), 127);
  EXPECT_EQ(activation_code_value(int8, codes[5]), std::nearbyint(-0.5 / (2.0 / 127)));
  auto fp8 = *parse_recipe("float8dq-tensor");
  quantize_activations(fp8, x.data(), 2, 4, codes.data(), scales.data());
  EXPECT_FLOAT_EQ(scales[0], 2.f / 448);
  EXPECT_NEAR(activation_code_value(fp8, codes[7]) * scales[0], 2, 1e-6);
}

// The shared scale (linear::scale_from_amax, a float quotient) is the double quotient rounded to
// float once, as the recipes computed it before, over magnitudes far apart.
TEST(QuantActivations, ScalesAreAmaxOverCodeMaxRoundedOnce) {
  const std::size_t rows = 64, hidden = 8;
  std::mt19937_64 g(11);
  std::uniform_real_distribution<float> mantissa(1, 2);
  std::uniform_int_distribution<int> exponent(-60, 60);
  std::vector<float> x(rows * hidden);
  for (auto& v : x) v = std::ldexp(mantissa(g), exponent(g)) * (g() % 2 ? 1 : -1);
  std::vector<std::uint8_t> codes(x.size());
  std::vector<float> scales(rows);
  for (auto [name, code_max] : {std::pair{"int8dq", 127.0}, {"float8dq-row", 448.0}}) {
    quantize_activations(*parse_recipe(name), x.data(), rows, hidden, codes.data(), scales.data());
    for (std::size_t m = 0; m < rows; ++m) {
      double amax = 0;
      for (std::size_t k = 0; k < hidden; ++k) amax = std::max(amax, std::fabs(double(x[m * hidden + k])));
      EXPECT_EQ(scales[m], static_cast<float>(amax / code_max)) << name << " row " << m;
    }
  }
}

// The target: HQQ int4-64 at least 1 dB above round-to-nearest on Gaussian weights.
// The codes round to nearest with ties to even, as std::nearbyint does, and saturate at +-127:
// a row whose amax is 127 (scale exactly 1) holds ties (0.5, 1.5, 2.5, -0.5, -2.5, 126.5),
// values just beside them, both ends and values past the ends (none: 127 is the amax) and
// Gaussian values; each code against std::nearbyint of x / scale, clamped.
TEST(QuantActivations, Int8CodesRoundTiesToEvenAsNearbyint) {
  std::vector<float> x = {127.f, -127.f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f,
                          std::nextafter(0.5f, 1.f), std::nextafter(0.5f, 0.f), std::nextafter(2.5f, 3.f),
                          std::nextafter(-2.5f, -3.f), 0.f, -0.f, 1e-30f, 63.5f, 64.5f};
  for (float v : gaussian(200, 41, 30)) x.push_back(std::clamp(v, -127.f, 127.f));
  const auto r = *parse_recipe("int8dq");
  std::vector<std::uint8_t> codes(x.size());
  float scale = 0;
  quantize_activations(r, x.data(), 1, x.size(), codes.data(), &scale);
  ASSERT_EQ(scale, 1.f);
  for (std::size_t k = 0; k < x.size(); ++k)
    EXPECT_EQ(static_cast<std::int8_t>(codes[k]), static_cast<int>(std::clamp(std::nearbyint(x[k]), -127.f, 127.f)))
        << "x = " << x[k];
}

TEST(QuantHqq, BeatsRoundToNearestByOneDecibel) {
  const std::size_t out = 256, hidden = 1024;
  auto w = gaussian(out * hidden, 3, 0.02f);
  for (int group : {32, 64, 128}) {
    auto rtn = quantize_weights(*parse_recipe("int4wo-" + std::to_string(group)), w.data(), out, hidden, Elem::bf16);
    auto hqq = quantize_weights(*parse_recipe("hqq-int4-" + std::to_string(group)), w.data(), out, hidden, Elem::bf16);
    double a = weight_sqnr(rtn, w), b = weight_sqnr(hqq, w);
    std::printf("group %d: rtn %.2f dB, hqq %.2f dB (+%.2f)\n", group, a, b, b - a);
    if (group == 64) {
      EXPECT_GE(b, a + 1.0) << "rtn " << a << " hqq " << b;
    }
    EXPECT_GT(b, a);
  }
}

TEST(QuantWeights, SameCodesOnAnyThreadCount) {
  auto w = gaussian(64 * 256, 4);
  auto r = *parse_recipe("hqq-int4-64");
  omp_set_num_threads(1);
  auto one = quantize_weights(r, w.data(), 64, 256, Elem::bf16);
  omp_set_num_threads(2);
  auto two = quantize_weights(r, w.data(), 64, 256, Elem::bf16);
  EXPECT_EQ(one.codes, two.codes);
  EXPECT_EQ(one.scales, two.scales);
  EXPECT_EQ(one.zeros, two.zeros);
}

TEST(QuantSqnr, DecibelsOfSignalOverNoise) {
  Sqnr s;
  s.add(1.1, 1);
  s.add(-0.9, -1);
  EXPECT_NEAR(s.db(), 10 * std::log10(2 / 0.02), 1e-9);
  EXPECT_NEAR(s.max_abs_error, 0.1, 1e-12);
  Sqnr exact;
  exact.add(2, 2);
  EXPECT_TRUE(std::isinf(exact.db()));
}

TEST(QuantSqnr, MergedPartsEqualOneAccumulator) {
  Sqnr whole, a, b;
  const double got[] = {1.1, -0.9, 3.5, 0.2}, ref[] = {1, -1, 3, 0.25};
  for (int i = 0; i < 4; ++i) {
    whole.add(got[i], ref[i]);
    (i < 2 ? a : b).add(got[i], ref[i]);
  }
  a.merge(b);
  EXPECT_DOUBLE_EQ(a.signal, whole.signal);
  EXPECT_DOUBLE_EQ(a.noise, whole.noise);
  EXPECT_EQ(a.max_abs_error, whole.max_abs_error);  // b's 0.5, not a's 0.1
  EXPECT_NEAR(a.max_abs_error, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(a.db(), whole.db());
}
