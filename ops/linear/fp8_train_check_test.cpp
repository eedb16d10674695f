// The check of a float8 training step (linear_train_check.cpp with fp8_train::tolerance): a step
// simulated here with e4m3 x / W and e5m2 dy (dynamic tensor scales) passes it, and its SQNR of
// y's product and of each gradient agrees with the test's own computation over the whole output;
// a transposed dW fails it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "ops/linear/fp8_train_plan.hpp"
#include "ops/linear/linear.hpp"

using namespace opmeter;

namespace {
constexpr std::size_t R = 32, H = 48, O = 48;  // square W: a transposed dW fits the output

// v cast to a float format with `mantissa` bits and subnormal spacing `min_ulp` after scaling by
// s (within the format's range), back in value space.
double cast(double v, double s, int mantissa, double min_ulp) {
  if (v == 0) return 0;
  int e = 0;
  std::frexp(v / s, &e);
  const double ulp = std::max(std::ldexp(1.0, e - 1 - mantissa), min_ulp);
  return std::nearbyint(v / s / ulp) * ulp * s;
}
constexpr double kE4m3MinUlp = 0x1p-9, kE5m2MinUlp = 0x1p-16;

struct Step {
  std::vector<double> y, dx, dw, db;  // y without the bias: the product
};

// The step of linear (act none) in fp64, with each operand cast first when `fp8` (scale 1 when not `scaled`).
Step step(const HostTensors& in, bool fp8, bool scaled = true) {
  auto amax = [&](std::size_t t, std::size_t n) {
    double m = 0;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(in[t][i]));
    return m;
  };
  const double sx = scaled ? amax(0, R * H) / 448 : 1, sw = scaled ? amax(1, O * H) / 448 : 1;
  const double sd = scaled ? amax(3, R * O) / 57344 : 1;
  auto x = [&](std::size_t i) { return fp8 ? cast(in[0][i], sx, 3, kE4m3MinUlp) : in[0][i]; };
  auto w = [&](std::size_t i) { return fp8 ? cast(in[1][i], sw, 3, kE4m3MinUlp) : in[1][i]; };
  auto d = [&](std::size_t i) { return fp8 ? cast(in[3][i], sd, 2, kE5m2MinUlp) : in[3][i]; };
  Step s{std::vector<double>(R * O, 0.0), std::vector<double>(R * H, 0.0), std::vector<double>(O * H, 0.0),
         std::vector<double>(O, 0.0)};
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < O; ++j) {
      s.db[j] += in[3][r * O + j];
      for (std::size_t k = 0; k < H; ++k) {
        s.y[r * O + j] += x(r * H + k) * w(j * H + k);
        s.dx[r * H + k] += d(r * O + j) * w(j * H + k);
        s.dw[j * H + k] += d(r * O + j) * x(r * H + k);
      }
    }
  return s;
}

double sqnr_db(const std::vector<double>& got, const std::vector<double>& ref) {
  double signal = 0, noise = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    signal += ref[i] * ref[i];
    noise += (got[i] - ref[i]) * (got[i] - ref[i]);
  }
  return 10 * std::log10(signal / noise);
}

struct Checked {
  Check check;
  Step stored, exact;  // as the output holds it (bf16), and fp64
};

Checked check_simulated(bool transpose_dw, bool scaled = true) {
  const Case c = parse_case(
      fmt::format("linear/cublaslt_fp8_train/bf16/batch=2,seq={},hidden={},out={},act=none,"
                  "quant=float8dq-tensor,mode=train,fast_accum=0{}/device=cuda:0",
                  R / 2, H, O, scaled ? "" : ",scaling_input=disabled,scaling_weight=disabled,scaling_grad=disabled"));
  auto spec = Registry::global().op(c.op)->spec();
  spec->bind(c);
  const auto in = spec->make_inputs(5);
  const Step fp8 = step(in, true, scaled);
  Checked r{{}, {}, step(in, false)};
  const auto l = linear::train_layout(linear::shape_of(c));
  HostTensor out(spec->output());
  const Elem e = out.desc().elem;
  auto put = [&](std::size_t at, const std::vector<double>& v, std::vector<double>& kept, const float* bias) {
    kept.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double b = bias ? bias[i % O] : 0.0;
      store(e, out.data(), at + i, v[i] + b);
      kept[i] = load(e, out.data(), at + i) - b;
    }
  };
  std::vector<double> dw = fp8.dw;
  if (transpose_dw)
    for (std::size_t j = 0; j < O; ++j)
      for (std::size_t k = 0; k < H; ++k) dw[j * H + k] = fp8.dw[k * H + j];
  put(l.y, fp8.y, r.stored.y, in[2].as<float>());
  put(l.dx, fp8.dx, r.stored.dx, nullptr);
  put(l.dw, dw, r.stored.dw, nullptr);
  put(l.db, fp8.db, r.stored.db, nullptr);
  r.check = spec->check(in, out, 3);
  return r;
}
}  // namespace

TEST(Fp8TrainCheck, ASimulatedFp8StepPassesWithItsOwnSqnr) {
  auto r = check_simulated(false);
  EXPECT_TRUE(r.check.ok) << r.check.detail;
  EXPECT_GT(r.check.max_error, 1e-3) << "the casts' error is visible: " << r.check.detail;
  EXPECT_DOUBLE_EQ(r.check.tolerance,
                   linear::fp8_train::tolerance(false, std::max({R, H, O}), linear::fp8_train::Format::e5m2));
  // Every row and column is sampled at this size: the check's SQNR is the whole output's.
  for (auto [metric, got, ref] : {std::tuple{"sqnr_db", &r.stored.y, &r.exact.y},
                                  {"sqnr_dx_db", &r.stored.dx, &r.exact.dx},
                                  {"sqnr_dw_db", &r.stored.dw, &r.exact.dw}}) {
    ASSERT_TRUE(r.check.metrics.count(metric)) << metric;
    const double expected = sqnr_db(*got, *ref);
    EXPECT_NEAR(r.check.metrics.at(metric).value, expected, 0.3) << metric;
    EXPECT_GT(expected, 15) << metric;  // fp8: tens of dB, not bf16's 50
    EXPECT_LT(expected, 40) << metric;
  }
}

TEST(Fp8TrainCheck, ATransposedWeightGradientFails) {
  auto r = check_simulated(true);
  EXPECT_FALSE(r.check.ok) << r.check.detail;
  EXPECT_NE(r.check.detail.find("dW["), std::string::npos) << r.check.detail;
}

// Scaling disabled: the Gaussian W (sd 1/sqrt(hidden)) falls partly below e4m3's normal range and
// loses precision there; the check still passes such a layer, and its SQNR is what the step has.
// At hidden 48 that loss is within the spread of W's draws (W's own SQNR, unscaled against
// scaled, differs by -0.2 to +0.5 dB over draws; by 3.3 dB at hidden 4096), so no order is asserted
// here: the SQNR reported is held to the test's own computation instead.
TEST(Fp8TrainCheck, DisabledScalingPassesWithTheSqnrOfItsStep) {
  auto r = check_simulated(false, false);
  EXPECT_TRUE(r.check.ok) << r.check.detail;
  for (auto [metric, got, ref] : {std::tuple{"sqnr_db", &r.stored.y, &r.exact.y},
                                  {"sqnr_dx_db", &r.stored.dx, &r.exact.dx},
                                  {"sqnr_dw_db", &r.stored.dw, &r.exact.dw}})
    EXPECT_NEAR(r.check.metrics.at(metric).value, sqnr_db(*got, *ref), 0.3) << metric;
  // Not the scaled step's numbers: the casts differ.
  EXPECT_NE(r.stored.y, check_simulated(false).stored.y);
}
