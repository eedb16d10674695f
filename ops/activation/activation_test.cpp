// The activation ops: the work model counted by hand from each function's definition, and the
// check's scaled error |y - ref| / (|ref| + 1) on an output that is wrong in one element.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "ops/activation/activation.hpp"
#include "tests/work_of.hpp"

using namespace opmeter;

namespace {

Work work_of(const std::string& name, const char* dtype) {
  return opmeter::testing::work_of_case(fmt::format("{}/opmeter/{}/batch=2,seq=3,hidden=5/threads=1", name, dtype));
}

}  // namespace

// batch 2 x seq 3 x hidden 5: 30 elements, each read once and written once (4 B in fp32, 2 in
// bf16). Flops per element, by the header's convention (activation.hpp: a transcendental such as
// exp, erf or tanh counts as one; a comparison, min or max as one; negation is free):
//   relu        max(x, 0)                                   1
//   relu6       min(max(x, 0), 6)                           2
//   leaky_relu  x > 0 ? x : 0.01 x: a compare, a multiply    2
//   sigmoid     1 / (1 + exp(-x)): exp, add, divide          3
//   silu        x * sigmoid(x) (swish): sigmoid's 3 + mul    4
//   gelu        0.5 x (1 + erf(x / sqrt 2)): scale x, erf, add 1, times x, times 0.5        5
//   gelu_tanh   0.5 x (1 + tanh(c (x + 0.044715 x^3))): x^3 (2), times 0.044715, add x,
//               times c, tanh, add 1, times x, times 0.5                                     9
//   hardswish   x * relu6(x + 3) / 6: add, relu6's 2, multiply, divide                       5
//               (the kernel's x * (min(max(x + 3, 0), 6) * (1/6)) is 5 operations too)
TEST(ActivationOps, WorkIsFlopsPerElementByHandAndOneReadAndWrite) {
  const double n = 2 * 3 * 5;
  const std::pair<const char*, double> flops_per_element[] = {{"relu", 1},      {"relu6", 2},    {"leaky_relu", 2},
                                                              {"sigmoid", 3},   {"silu", 4},     {"gelu", 5},
                                                              {"gelu_tanh", 9}, {"hardswish", 5}};
  for (auto [name, per] : flops_per_element) {
    auto w = work_of(name, "fp32");
    EXPECT_DOUBLE_EQ(w.flops, per * n) << name;
    EXPECT_DOUBLE_EQ(w.bytes_read, n * 4) << name;     // x
    EXPECT_DOUBLE_EQ(w.bytes_written, n * 4) << name;  // y
    auto h = work_of(name, "bf16");
    EXPECT_DOUBLE_EQ(h.flops, per * n) << name;
    EXPECT_DOUBLE_EQ(h.bytes_read, n * 2) << name;
    EXPECT_DOUBLE_EQ(h.bytes_written, n * 2) << name;
  }
}

namespace {

// GELU computed in fp64 from its definition, x Phi(x) with Phi(x) = (1 + erf(x / sqrt 2)) / 2,
// stored in fp32; element [0,0] gets `offset` more.
class OffByOneElementGelu : public HostImpl<activation::ActivationOp> {
 public:
  explicit OffByOneElementGelu(double offset) : HostImpl(tensor::Act::gelu), offset_(offset) {}
  void run(std::size_t copy) override {
    auto* x = static_cast<const float*>(in(copy, 0));
    auto* y = static_cast<float*>(out(copy));
    const std::size_t n = out_rows() * out_cols();
    for (std::size_t i = 0; i < n; ++i) {
      const double v = x[i];
      y[i] = static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))) + (i == 0 ? offset_ : 0.0));
    }
  }

 private:
  double offset_;
};

}  // namespace

TEST(ActivationOps, CheckReportsTheScaledErrorOfTheOneWrongElement) {
  const Case c = parse_case("gelu/test/fp32/batch=2,seq=3,hidden=5/threads=1");
  const std::uint64_t seed = 11;
  OffByOneElementGelu impl(1e-3);
  impl.setup(c, {.copies = 1, .seed = 1});
  const Check check = impl.verify(seed);

  // The same inputs, drawn again for the seed the check used: x[0] is what [0,0] was computed from.
  activation::ActivationOp spec(tensor::Act::gelu);
  spec.bind(c);
  const double x0 = spec.make_inputs(seed)[0][0];
  const double ref = 0.5 * x0 * (1 + std::erf(x0 / std::sqrt(2.0)));
  const double got = static_cast<float>(ref + 1e-3);  // what the impl stored
  // The header's metric: |y - ref| / (|ref| + 1). Every other element is off by its fp32 rounding
  // only (< 2^-24 of |ref| / (|ref| + 1) < 6e-8), far below [0,0]'s error of about 1e-3 / 9 at least.
  const double expected = std::fabs(got - ref) / (std::fabs(ref) + 1);
  EXPECT_NEAR(check.max_error, expected, 1e-9 * expected) << check.detail;
  EXPECT_GT(expected, 1e-3 / 9.5);  // |gelu(x)| <= 8 on the inputs' range -8..8
  EXPECT_NE(check.detail.find("at [0,0]"), std::string::npos) << check.detail;
  EXPECT_EQ(check.ok, expected <= check.tolerance);
}
