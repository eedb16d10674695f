// opmeter's own tensor kernels, every ISA variant this CPU runs, against fp64 over the whole
// input range: the vectorized exp and erf approximations (tails, huge inputs, +-inf, NaN), odd
// row lengths that leave partial vectors, and outputs large enough to take the streaming stores.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "opmeter/buffer.hpp"
#include "opmeter/context.hpp"
#include "ops/activation/activation.hpp"
#include "ops/tensor/kernels.hpp"

using namespace opmeter;
using tensor::Act;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kActTolerance = 64 * 0x1p-24;  // ActivationOp::fp32_tolerance

std::vector<tensor::Kernels> variants() {
  std::vector<tensor::Kernels> v = {tensor::base_kernels()};
  const auto& cpu = cpu_info();
  if (cpu.has("avx2") && cpu.has("fma")) v.push_back(tensor::avx2_kernels());
  if (cpu.has("avx512f") && cpu.has("avx512bw")) v.push_back(tensor::avx512_kernels());
  return v;
}

float bf16_value(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t(h) << 16); }
std::uint16_t bf16_bits(float f) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16); }

// `points` evenly spaced values from lo to hi.
std::vector<float> sweep(float lo, float hi, std::size_t points) {
  std::vector<float> x(points);
  for (std::size_t i = 0; i < points; ++i) x[i] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(points - 1);
  return x;
}

std::vector<float> run_act(const tensor::Kernels& k, Act a, const std::vector<float>& x) {
  std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());
  k.act(a, false, x.data(), y.data(), x.size());
  return y;
}

// Worst |y - ref| / (|ref| + 1), the activation ops' error metric.
double worst_act_error(Act a, const std::vector<float>& x, const std::vector<float>& y, float* at) {
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double ref = activation::reference(a, x[i]);
    double err = std::fabs(y[i] - ref) / (std::fabs(ref) + 1);
    if (!(err <= worst)) worst = err, *at = x[i];
  }
  return worst;
}

}  // namespace

TEST(TensorKernels, ActivationsAreAccurateOverTheWholeRange) {
  // Dense over where the functions bend, then out to the largest floats.
  std::vector<float> x = sweep(-30, 30, 600001);
  for (float e = 1; e < 38.5f; e += 0.25f) x.push_back(std::pow(10.0f, e)), x.push_back(-std::pow(10.0f, e));
  x.push_back(std::numeric_limits<float>::max());
  x.push_back(-std::numeric_limits<float>::max());
  x.push_back(std::numeric_limits<float>::denorm_min());
  x.push_back(0.0f);
  x.push_back(-0.0f);
  for (const auto& k : variants())
    for (Act a : tensor::all_acts()) {
      if (a == Act::gelu_tanh) continue;  // its x^3 overflows for |x| > 1e12 (as PyTorch's): below
      float at = 0;
      double err = worst_act_error(a, x, run_act(k, a, x), &at);
      // Half the op's tolerance. GELU is the closest (8.3e-7 near x = -4.3 to -5.3, where Phi is tiny
      // and 0.5 + x P / Q cancels; |error| * |x| still counts against |y| + 1 ~ 1).
      EXPECT_LE(err, kActTolerance / 2) << k.isa << " " << tensor::to_string(a) << " worst at x = " << at;
    }
}

TEST(TensorKernels, GeluTanhIsAccurateWhereItsCubeIsFinite) {
  std::vector<float> x = sweep(-1e4f, 1e4f, 400001);
  for (const auto& k : variants()) {
    float at = 0;
    double err = worst_act_error(Act::gelu_tanh, x, run_act(k, Act::gelu_tanh, x), &at);
    EXPECT_LE(err, kActTolerance / 2) << k.isa << " worst at x = " << at;
  }
}

TEST(TensorKernels, ExpIsAccurateToAFewUlpWhereSigmoidIsExp) {
  // sigmoid(x) = exp(x) / (1 + exp(x)) ~ exp(x) for x << 0: its relative error is exp's, down to
  // the smallest normal float; below that exp flushes through denormals to exactly 0.
  std::vector<float> x = sweep(-87.3f, 0, 400001);
  for (const auto& k : variants()) {
    std::vector<float> y = run_act(k, Act::sigmoid, x);
    double worst = 0;
    float at = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      double ref = 1 / (1 + std::exp(-double(x[i])));
      double err = std::fabs(y[i] - ref) / ref;
      if (err > worst) worst = err, at = x[i];
    }
    EXPECT_LE(worst, 6e-7) << k.isa << " worst at x = " << at;  // ~5 ulp: exp's 2 plus 1 + e and 1 / (.)
    std::vector<float> tail = run_act(k, Act::sigmoid, {-104.0f, -200.0f, -1e30f, -kInf});
    for (float v : tail) EXPECT_EQ(v, 0.0f) << k.isa;
  }
}

TEST(TensorKernels, InfinitiesAndNanFollowPyTorch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {kInf, -kInf, nan};
  for (const auto& k : variants()) {
    auto gelu = run_act(k, Act::gelu, x), silu = run_act(k, Act::silu, x), sig = run_act(k, Act::sigmoid, x);
    auto tanh_form = run_act(k, Act::gelu_tanh, x), relu = run_act(k, Act::relu, x);
    EXPECT_EQ(gelu[0], kInf) << k.isa;
    EXPECT_TRUE(std::isnan(gelu[1])) << k.isa;  // -inf * Phi(-inf) = -inf * 0
    EXPECT_EQ(silu[0], kInf) << k.isa;
    EXPECT_TRUE(std::isnan(silu[1])) << k.isa;
    EXPECT_EQ(sig[0], 1.0f) << k.isa;
    EXPECT_EQ(sig[1], 0.0f) << k.isa;
    EXPECT_EQ(tanh_form[0], kInf) << k.isa;
    EXPECT_EQ(relu[0], kInf) << k.isa;
    EXPECT_EQ(relu[1], 0.0f) << k.isa;
    for (const auto* y : {&gelu, &silu, &sig, &tanh_form, &relu}) EXPECT_TRUE(std::isnan((*y)[2])) << k.isa;
    // GELU's tails are exact: 0 and x.
    auto tails = run_act(k, Act::gelu, {-6.0f, -1e30f, 6.0f, 1e30f});
    EXPECT_EQ(tails[0], 0.0f) << k.isa;
    EXPECT_EQ(tails[1], 0.0f) << k.isa;
    EXPECT_EQ(tails[2], 6.0f) << k.isa;
    EXPECT_EQ(tails[3], 1e30f) << k.isa;
  }
}

namespace {

// Rows of `cols` values in [-8, 8) (deterministic), one per row with a large outlier.
std::vector<float> rows_of_values(std::size_t rows, std::size_t cols) {
  std::vector<float> x(rows * cols);
  std::uint32_t s = 12345;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) * 0x1p-24f * 16 - 8;
  }
  return x;
}

void ref_softmax(const float* x, std::size_t n, double* y) {
  double m = -INFINITY, s = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, double(x[i]));
  for (std::size_t i = 0; i < n; ++i) s += y[i] = std::exp(double(x[i]) - m);
  for (std::size_t i = 0; i < n; ++i) y[i] /= s;
}

void ref_layernorm(const float* x, std::size_t n, const float* g, const float* b, double* y) {
  double mean = 0, var = 0;
  for (std::size_t i = 0; i < n; ++i) mean += x[i];
  mean /= double(n);
  for (std::size_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  double rstd = 1 / std::sqrt(var / double(n) + tensor::kNormEps);
  for (std::size_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * g[i] + b[i];
}

void ref_rmsnorm(const float* x, std::size_t n, const float* g, double* y) {
  double s2 = 0;
  for (std::size_t i = 0; i < n; ++i) s2 += double(x[i]) * x[i];
  double rrms = 1 / std::sqrt(s2 / double(n) + tensor::kNormEps);
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * rrms * g[i];
}

// The norm ops' tolerance (NormOp::fp32_tolerance) plus bf16 storage where it applies.
double norm_tolerance(std::size_t cols, bool bf16) {
  return (64 + 4 * std::sqrt(double(cols))) * 0x1p-24 + (bf16 ? 4 * 0x1p-8 : 0);
}

enum class RowOp { softmax, layernorm, rmsnorm };

// Runs a row kernel on rows x cols (fp32 or bf16 storage) and returns the worst scaled error
// against fp64 on the same (rounded) inputs; mag as the ops' checks define it.
double worst_row_error(const tensor::Kernels& k, RowOp op, bool bf16, std::size_t rows, std::size_t cols) {
  std::vector<float> x = rows_of_values(rows, cols), g(cols), b(cols);
  for (std::size_t c = 0; c < cols; ++c) g[c] = 0.5f + float(c % 11) / 10, b[c] = float(c % 7) / 7 - 0.5f;
  std::size_t n = rows * cols, bytes = n * (bf16 ? 2 : 4);
  Buffer in(bytes), out(bytes);
  for (std::size_t i = 0; i < n; ++i) {
    if (bf16) in.span<std::uint16_t>()[i] = bf16_bits(x[i]), x[i] = bf16_value(bf16_bits(x[i]));
    else in.span<float>()[i] = x[i];
  }
  std::fill_n(static_cast<unsigned char*>(out.data()), bytes, 0xff);  // NaN: unwritten shows
  switch (op) {
    case RowOp::softmax: k.softmax(bf16, in.data(), out.data(), rows, cols); break;
    case RowOp::layernorm: k.layernorm(bf16, in.data(), out.data(), g.data(), b.data(), rows, cols); break;
    case RowOp::rmsnorm: k.rmsnorm(bf16, in.data(), out.data(), g.data(), rows, cols); break;
  }
  std::vector<double> ref(cols);
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * cols;
    switch (op) {
      case RowOp::softmax: ref_softmax(xr, cols, ref.data()); break;
      case RowOp::layernorm: ref_layernorm(xr, cols, g.data(), b.data(), ref.data()); break;
      case RowOp::rmsnorm: ref_rmsnorm(xr, cols, g.data(), ref.data()); break;
    }
    for (std::size_t c = 0; c < cols; ++c) {
      std::size_t i = r * cols + c;
      double got = bf16 ? bf16_value(out.span<std::uint16_t>()[i]) : out.span<float>()[i];
      double mag = op == RowOp::softmax ? ref[c] + 1.0 / double(cols) : std::fabs(ref[c]) + 1;
      double err = std::fabs(got - ref[c]) / mag;
      if (!(err <= worst)) worst = err;
    }
  }
  return worst;
}

const char* name_of(RowOp op) {
  return op == RowOp::softmax ? "softmax" : op == RowOp::layernorm ? "layernorm" : "rmsnorm";
}

}  // namespace

TEST(TensorKernels, RowOpsMatchFp64AtOddRowLengths) {
  for (const auto& k : variants())
    for (RowOp op : {RowOp::softmax, RowOp::layernorm, RowOp::rmsnorm})
      for (bool bf16 : {false, true})
        for (std::size_t cols : {1, 7, 16, 37, 64, 263, 4096, 4097}) {
          double err = worst_row_error(k, op, bf16, 5, cols);
          EXPECT_LE(err, norm_tolerance(cols, bf16)) << k.isa << " " << name_of(op) << (bf16 ? " bf16" : " fp32")
                                                     << " cols " << cols;
        }
}

// Outputs of 32 MiB and more take the streaming stores (kStreamMinBytes): rows that start on a
// vector boundary do, odd rows do not. Both must be right, and every element written.
TEST(TensorKernels, LargeOutputsAreRightWithStreamingStores) {
  const tensor::Kernels k = variants().back();  // a copy: variants() returns a temporary
  for (bool bf16 : {false, true}) {
    std::size_t cols = 4096, rows = ((bf16 ? 18u : 9u) << 20) / cols;  // 36 MiB out
    for (RowOp op : {RowOp::softmax, RowOp::layernorm, RowOp::rmsnorm})
      EXPECT_LE(worst_row_error(k, op, bf16, rows, cols), norm_tolerance(cols, bf16))
          << k.isa << " " << name_of(op) << (bf16 ? " bf16" : " fp32");
  }
  // An odd row length: regular stores, the same answer.
  EXPECT_LE(worst_row_error(k, RowOp::layernorm, false, 2300, 4097), norm_tolerance(4097, false));

  for (bool bf16 : {false, true}) {
    std::size_t n = ((bf16 ? 18u : 9u) << 20) + 13;  // 36 MiB and a partial vector
    std::vector<float> x = rows_of_values(1, n);
    Buffer in(n * 4), out(n * 4);
    for (std::size_t i = 0; i < n; ++i) {
      if (bf16) in.span<std::uint16_t>()[i] = bf16_bits(x[i]), x[i] = bf16_value(bf16_bits(x[i]));
      else in.span<float>()[i] = x[i];
    }
    std::fill_n(static_cast<unsigned char*>(out.data()), n * 4, 0xff);
    k.act(Act::gelu, bf16, in.data(), out.data(), n);
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double got = bf16 ? bf16_value(out.span<std::uint16_t>()[i]) : out.span<float>()[i];
      double ref = activation::reference(Act::gelu, x[i]);
      double err = std::fabs(got - ref) / (std::fabs(ref) + 1);
      if (!(err <= worst)) worst = err;
    }
    EXPECT_LE(worst, kActTolerance + (bf16 ? 4 * 0x1p-8 : 0)) << k.isa << (bf16 ? " bf16" : " fp32");
  }
}

TEST(TensorKernels, SoftmaxAndCrossEntropyTakeInfinitiesAndHugeLogits) {
  for (const auto& k : variants()) {
    // A masked entry (-inf) is exactly 0; a huge logit takes everything.
    std::vector<float> x = {0.0f, -kInf, 1.0f, 1e30f, -1e30f, 2.0f, -kInf}, y(7);
    k.softmax(false, x.data(), y.data(), 1, 3);
    EXPECT_EQ(y[1], 0.0f) << k.isa;
    EXPECT_NEAR(y[0], 1 / (1 + std::exp(1.0)), 1e-7) << k.isa;
    k.softmax(false, x.data() + 3, y.data() + 3, 1, 4);
    EXPECT_EQ(y[3], 1.0f) << k.isa;
    EXPECT_EQ(y[4], 0.0f) << k.isa;
    EXPECT_EQ(y[6], 0.0f) << k.isa;

    // Cross-entropy at odd class counts, with -inf logits off the label and logits of 1000.
    for (std::size_t cols : {1, 7, 37, 4097}) {
      const std::size_t rows = 3;
      std::vector<float> logits = rows_of_values(rows, cols);
      std::vector<std::int32_t> labels(rows);
      for (std::size_t r = 0; r < rows; ++r) labels[r] = static_cast<std::int32_t>((r * 5) % cols);
      if (cols > 2) logits[1 * cols + (labels[1] + 1) % cols] = -kInf;
      logits[2 * cols + labels[2]] = 1000.0f;
      double ref = 0, scale = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = logits.data() + r * cols;
        double m = -INFINITY, s = 0;
        for (std::size_t c = 0; c < cols; ++c) m = std::max(m, double(xr[c]));
        for (std::size_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
        ref += std::log(s) + m - xr[labels[r]];
        scale += std::fabs(std::log(s) + m) + std::fabs(xr[labels[r]]);
      }
      double got = k.cross_entropy(false, logits.data(), labels.data(), rows, cols);
      EXPECT_LE(std::fabs(got - ref / rows) / (scale / rows), 1e-5) << k.isa << " cols " << cols;
    }
  }
}

TEST(TensorKernels, EpilogueAddsBiasAndActivatesOddTiles) {
  const std::size_t rows = 3, cols = 37, ldc = 40, ldy = 41;
  std::vector<float> c(rows * ldc), bias(cols), y(rows * ldy, -7.0f);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = float(i % 23) / 2 - 5;
  for (std::size_t j = 0; j < cols; ++j) bias[j] = float(j % 5) / 4 - 0.5f;
  for (const auto& k : variants()) {
    k.epilogue(Act::gelu, c.data(), ldc, bias.data(), false, y.data(), ldy, rows, cols);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        double ref = activation::reference(Act::gelu, double(c[i * ldc + j]) + bias[j]);
        EXPECT_NEAR(y[i * ldy + j], ref, kActTolerance * (std::fabs(ref) + 1)) << k.isa << " " << i << "," << j;
      }
      for (std::size_t j = cols; j < ldy; ++j) EXPECT_EQ(y[i * ldy + j], -7.0f) << "wrote past the tile's row";
    }
  }
}

// The training steps' activation backward, dz = dy act'(z), against act' in fp64 with the same
// choices at the kinks (relu's 0, hardswish's +-3): every ISA, fp32 and bf16, in place (dz = dy)
// as the steps call it, an odd length leaving a partial vector, z over the range where each
// derivative changes and into the tails.
TEST(TensorKernels, ActivationBackwardMatchesTheFp64Derivative) {
  auto derivative = [](Act a, double x) {
    auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
    switch (a) {
      case Act::none: return 1.0;
      case Act::relu: return x > 0 ? 1.0 : 0.0;
      case Act::relu6: return x > 0 && x < 6 ? 1.0 : 0.0;
      case Act::leaky_relu: return x > 0 ? 1.0 : double(tensor::kLeakySlope);
      case Act::gelu: return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
      case Act::gelu_tanh: {
        const double c = std::sqrt(2 / M_PI), u = c * (x + 0.044715 * x * x * x), t = std::tanh(u);
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
      }
      case Act::silu: return sig(x) * (1 + x * (1 - sig(x)));
      case Act::sigmoid: return sig(x) * (1 - sig(x));
      case Act::hardswish: return x < -3 ? 0.0 : x > 3 ? 1.0 : (2 * x + 3) / 6;
    }
    return 0.0;
  };
  const std::vector<float> z = sweep(-12.0f, 12.0f, 4001);  // odd: a partial vector at the end
  std::vector<Act> acts = tensor::all_acts();
  acts.push_back(Act::none);
  for (const auto& k : variants())
    for (Act a : acts)
      for (bool bf16 : {false, true}) {
        const std::size_t n = z.size();
        std::vector<float> zf(n), dyf(n);
        std::vector<std::uint16_t> zh(n), dyh(n);
        for (std::size_t i = 0; i < n; ++i) {
          zh[i] = bf16_bits(z[i]);
          dyh[i] = bf16_bits(1.0f - 0.37f * float(i % 7));
          zf[i] = bf16 ? bf16_value(zh[i]) : z[i];
          dyf[i] = bf16_value(dyh[i]);
        }
        std::vector<float> outf = dyf;
        std::vector<std::uint16_t> outh = dyh;
        void* d = bf16 ? static_cast<void*>(outh.data()) : static_cast<void*>(outf.data());
        k.act_backward(a, bf16, d, bf16 ? static_cast<const void*>(zh.data()) : zf.data(), d, n);
        for (std::size_t i = 0; i < n; ++i) {
          const double want = double(dyf[i]) * derivative(a, zf[i]);
          const double got = bf16 ? bf16_value(outh[i]) : outf[i];
          // fp32: a few ulp of act' (kActTolerance); bf16 adds the store's rounding, 2^-8 relative.
          const double tol = (bf16 ? 0x1p-8 : 0.0) * std::fabs(want) + kActTolerance * std::fabs(double(dyf[i])) * (1 + std::fabs(derivative(a, zf[i])));
          ASSERT_LE(std::fabs(got - want), tol) << k.isa << " " << tensor::to_string(a) << (bf16 ? " bf16" : " fp32")
                                                << " at z = " << zf[i] << ": got " << got << ", want " << want;
        }
      }
}

