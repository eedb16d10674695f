// Configs that pick cases: random GEMM shapes, a random sample of a sweep, listed case strings.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "tests/config_errors.hpp"
#include "config/config.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/shapes.hpp"

using namespace opmeter;

namespace {
std::string error_of(const std::string& yaml) { return config_test_support::config_error_of(yaml, "t.yaml"); }
using config_test_support::has;
}  // namespace

TEST(RandomShapes, InRangeRoundedCappedAndReproducible) {
  auto a = random_shapes(300, 16, 2048, 7, 8, 1e9);
  ASSERT_EQ(a.size(), 300u);
  std::set<std::int64_t> distinct;
  for (auto& s : a) {
    for (auto d : {s.m, s.k, s.n}) {
      EXPECT_GE(d, 16);
      EXPECT_LE(d, 2048);
      EXPECT_EQ(d % 8, 0);
      distinct.insert(d);
    }
    EXPECT_LE(double(s.m) * double(s.k) * double(s.n), 1e9);
  }
  EXPECT_GT(distinct.size(), 100u);  // spread over the range, not a few values
  EXPECT_EQ(random_shapes(300, 16, 2048, 7, 8, 1e9), a);
  EXPECT_NE(random_shapes(300, 16, 2048, 8, 8, 1e9), a);
}

// Multiples of multiple_of within [min, max], also where multiple_of is near or above min or max
// (min 16, max 100, multiple_of 64 gave 100; max 20 with multiple_of 4096 gave 4096).
TEST(RandomShapes, MultiplesWithinTheRangeOrRefused) {
  for (auto [lo, hi, multiple] : {std::tuple{16, 100, 64}, {16, 200, 64}, {100, 1000, 64}, {1, 5, 5}, {7, 7, 7}}) {
    for (auto& s : random_shapes(200, lo, hi, 3, multiple)) {
      for (auto d : {s.m, s.k, s.n}) {
        EXPECT_GE(d, lo);
        EXPECT_LE(d, hi);
        EXPECT_EQ(d % multiple, 0) << d;
      }
    }
  }
  EXPECT_THROW(random_shapes(20, 16, 20, 3, 4096), std::invalid_argument);
  EXPECT_THROW(random_shapes(20, 65, 127, 3, 64), std::invalid_argument);
}

TEST(RandomShapes, LogUniformSoSmallAndLargeAreEquallyLikely) {
  auto shapes = random_shapes(2000, 16, 4096, 3);
  int below = 0;  // the geometric middle of [16, 4096] is 256
  for (auto& s : shapes) below += s.m < 256;
  EXPECT_NEAR(below / 2000.0, 0.5, 0.05);
}

TEST(SampleIndices, DistinctSortedAndAllWhenCountCoversThem) {
  auto s = sample_indices(100, 10, 1);
  ASSERT_EQ(s.size(), 10u);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::set<std::size_t>(s.begin(), s.end()).size(), 10u);
  EXPECT_LT(s.back(), 100u);
  EXPECT_EQ(sample_indices(5, 10, 1).size(), 5u);
  EXPECT_NE(sample_indices(100, 10, 2), s);
}

// The train checks' rows: the two edges always, the rest distinct and sorted inside them.
TEST(SampleIndices, WithEdgesKeepsFirstAndLast) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    auto s = sample_indices_with_edges(100, 10, seed);
    ASSERT_EQ(s.size(), 10u);
    EXPECT_EQ(s.front(), 0u);
    EXPECT_EQ(s.back(), 99u);
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    EXPECT_EQ(std::set<std::size_t>(s.begin(), s.end()).size(), 10u);
    EXPECT_EQ(sample_indices_with_edges(100, 10, seed), s);
  }
  EXPECT_NE(sample_indices_with_edges(100, 10, 1), sample_indices_with_edges(100, 10, 2));
  EXPECT_EQ(sample_indices_with_edges(5, 10, 1), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(sample_indices_with_edges(50, 1, 1), (std::vector<std::size_t>{0, 49}));  // edges at least
  EXPECT_EQ(sample_indices_with_edges(1, 0, 1), (std::vector<std::size_t>{0}));
  EXPECT_TRUE(sample_indices_with_edges(0, 4, 1).empty());
}

TEST(ConfigSampling, RandomGeneratorGivesGemmCases) {
  auto plan = load_config_text(R"(
ops: [gemm]
impls: [onednn]
shapes: [{name: random, count: 25, min: 8, max: 512, seed: 3, multiple_of: 4}]
)", "t.yaml", 2);
  ASSERT_EQ(plan.cases.size(), 25u);
  for (auto& c : plan.cases) EXPECT_EQ(c.get_int("M") % 4, 0);
}

TEST(ConfigSampling, SampleKeepsCountOfTheSweep) {
  const char* sweep = R"(
ops: [add]
impls: [opmeter]
batch: [1, 2, 4, 8]
seq: [16, 32, 64, 128]
hidden: [64, 128, 256, 512]
)";
  auto all = load_config_text(sweep, "t.yaml", 2);
  ASSERT_EQ(all.cases.size(), 64u);
  auto some = load_config_text(std::string(sweep) + "sample: {count: 10, seed: 5}\n", "t.yaml", 2);
  ASSERT_EQ(some.cases.size(), 10u);
  std::set<std::string> strings;
  for (auto& c : all.cases) strings.insert(c.to_string());
  for (auto& c : some.cases) EXPECT_TRUE(strings.count(c.to_string())) << c.to_string();
  auto again = load_config_text(std::string(sweep) + "sample: {count: 10, seed: 5}\n", "t.yaml", 2);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(again.cases[i], some.cases[i]);
}

TEST(ConfigSampling, SampleLeavesOutCasesOverTheWorkCap) {
  auto plan = load_config_text(R"(
ops: [gemm]
impls: [onednn]
shapes: [{name: custom, shapes: [[64, 64, 64], [1024, 1024, 1024], [128, 128, 128]]}]
sample: {count: 10, max_gflop: 0.01}
)", "t.yaml", 2);
  ASSERT_EQ(plan.cases.size(), 2u);  // 2 x 1024^3 FLOP is over 0.01 GFLOP
  for (auto& c : plan.cases) EXPECT_LE(c.get_int("M"), 128);
  EXPECT_TRUE(has(error_of("ops: [add]\nsample: {count: 2, max_gflop: 0.000000001}\n"), "every case"));
}

TEST(ConfigSampling, ListedCasesStandAsWritten) {
  auto plan = load_config_text(R"(
cases:
  - gemm/onednn/fp32/M=64,N=32,K=16/threads=1
  - add/opmeter/bf16/batch=1,seq=8,hidden=64/threads=2
)", "t.yaml", 2);
  ASSERT_EQ(plan.cases.size(), 2u);
  EXPECT_EQ(plan.cases[0].to_string(), "gemm/onednn/fp32/M=64,N=32,K=16/threads=1");
  EXPECT_EQ(plan.cases[1].dtype, DType::bf16);
  EXPECT_EQ(plan.cases[1].threads, 2);
}

// A case listed twice is refused, as a value listed twice in any list is (issue 27 item 12).
TEST(ConfigSampling, ACaseListedTwiceIsRefused) {
  auto e = error_of("cases:\n  - gemm/onednn/fp32/M=64,N=32,K=16/threads=1\n  - gemm/onednn/fp32/M=64,N=32,K=16/threads=1\n");
  EXPECT_TRUE(has(e, "t.yaml:3")) << e;
  EXPECT_TRUE(has(e, "cases: 'gemm/onednn/fp32/M=64,N=32,K=16/threads=1' is listed twice")) << e;
}

TEST(ConfigSampling, BadInputNamesTheKeyAndLine) {
  auto e = error_of("cases:\n  - gemm/onednn/fp32/M=64,N=32,K=16/threads=1\n  - gemm/nosuch/fp32/M=1,N=1,K=1/threads=1\n");
  EXPECT_TRUE(has(e, "t.yaml:3")) << e;
  EXPECT_TRUE(has(e, "cases:")) << e;
  EXPECT_TRUE(has(e, "nosuch")) << e;
  e = error_of("cases: [not a case]\n");
  EXPECT_TRUE(has(e, "cases:")) << e;
  e = error_of("ops: [gemm]\nshapes: [{name: random, min: 8}]\n");
  EXPECT_TRUE(has(e, "'count'")) << e;
  e = error_of("ops: [gemm]\nshapes: [{name: random, count: 4, min: 64, max: 8}]\n");
  EXPECT_TRUE(has(e, "min 64 is greater than max 8")) << e;
  e = error_of("ops: [gemm]\nshapes: [{name: random, count: 4, min: 64, max_macs: 10}]\n");
  EXPECT_TRUE(has(e, "max_macs")) << e;
  e = error_of("ops: [add]\nsample: {seed: 3}\n");
  EXPECT_TRUE(has(e, "sample: 'count'")) << e;
  e = error_of("ops: [add]\nsample: {count: 0}\n");
  EXPECT_TRUE(has(e, "sample.count")) << e;
  e = error_of("ops: [add]\nsample: {count: 3, sed: 1}\n");
  EXPECT_TRUE(has(e, "sed")) << e;
}
