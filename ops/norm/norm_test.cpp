// The normalization ops' work models, counted by hand from what each computes (norm.hpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "tests/work_of.hpp"

using namespace opmeter;

namespace {

Work work_of(const std::string& name, const char* dtype) {
  return opmeter::testing::work_of_case(fmt::format("{}/opmeter/{}/batch=2,seq=3,hidden=5/threads=1", name, dtype));
}

}  // namespace

// batch 2 x seq 3 = 6 rows of hidden 5: 30 elements x, each read once, y written once. The
// learned and running vectors are fp32, hidden (5) values each, read once per call.
// Flops per element (one add, multiply, compare or exp each; per-row terms such as the rsqrt
// are O(rows) and not counted):
//   layernorm  sum for the mean (1), x - mean (1), its square (1), sum of squares (1), times
//              rstd (1), times gamma (1), plus beta (1)                                      7
//   rmsnorm    x^2 (1), its sum (1), times 1/rms (1), times gamma (1)                         4
//   batchnorm  inference with running mean and var: per channel a = gamma / sqrt(var + eps)
//              and b = beta - mean a once, then x a + b per element (a multiply and an add) 2
//   softmax    row max (1 compare), x - max (1), exp (1), the sum (1), divide by it (1)      5
TEST(NormOps, WorkIsCountedByHand) {
  const double n = 30, h = 5;
  struct Expect {
    const char* name;
    double flops_per_element;
    double vectors;  // fp32 vectors of hidden values read
  };
  // layernorm: gamma, beta; rmsnorm: gamma; batchnorm: mean, var, gamma, beta; softmax: none.
  for (auto e :
       {Expect{"layernorm", 7, 2}, Expect{"rmsnorm", 4, 1}, Expect{"batchnorm", 2, 4}, Expect{"softmax", 5, 0}}) {
    auto w = work_of(e.name, "fp32");
    EXPECT_DOUBLE_EQ(w.flops, e.flops_per_element * n) << e.name;
    EXPECT_DOUBLE_EQ(w.bytes_read, n * 4 + e.vectors * h * 4) << e.name;
    EXPECT_DOUBLE_EQ(w.bytes_written, n * 4) << e.name;
    auto b = work_of(e.name, "bf16");  // x and y in 2 bytes, the vectors still fp32
    EXPECT_DOUBLE_EQ(b.flops, e.flops_per_element * n) << e.name;
    EXPECT_DOUBLE_EQ(b.bytes_read, n * 2 + e.vectors * h * 4) << e.name;
    EXPECT_DOUBLE_EQ(b.bytes_written, n * 2) << e.name;
  }
  // The note's numbers, spelled out: layernorm 7*30 = 210 flops, 30*4 + 2*4*5 = 160 B read.
  EXPECT_DOUBLE_EQ(work_of("layernorm", "fp32").flops, 210);
  EXPECT_DOUBLE_EQ(work_of("layernorm", "fp32").bytes_read, 160);
  EXPECT_DOUBLE_EQ(work_of("batchnorm", "fp32").bytes_read, 120 + 80);
}
