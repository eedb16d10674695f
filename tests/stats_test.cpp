#include <gtest/gtest.h>

#include <cmath>

#include "opmeter/stats.hpp"

using namespace opmeter;

TEST(Stats, KnownValues) {
  std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(x), 5.0);
  EXPECT_NEAR(stdev(x), std::sqrt(32.0 / 7.0), 1e-12);  // sample stdev
  EXPECT_DOUBLE_EQ(median(x), 4.5);
  EXPECT_DOUBLE_EQ(quantile(x, 0.25), 4.0);   // numpy linear: position 1.75 -> 4
  EXPECT_DOUBLE_EQ(quantile(x, 0.75), 5.5);   // position 5.25 -> 5 + 0.25*2
  EXPECT_DOUBLE_EQ(quantile(x, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(quantile(x, 1.0), 9.0);
}

TEST(Stats, MedianOddAndUnsorted) {
  EXPECT_DOUBLE_EQ(median({9, 1, 5}), 5.0);
  EXPECT_DOUBLE_EQ(median({3}), 3.0);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

TEST(Stats, MedianConfidenceIntervalFromOrderStatistics) {
  std::vector<double> x;
  for (int i = 1; i <= 100; ++i) x.push_back(i);
  auto [lo, hi] = median_ci95(x);
  // n=100: ranks round(50 - 9.8) = 40 and round(1 + 50 + 9.8) = 61 (1-based; Conover).
  EXPECT_DOUBLE_EQ(lo, 40.0);
  EXPECT_DOUBLE_EQ(hi, 61.0);
  auto small = median_ci95({3, 1, 2});
  EXPECT_DOUBLE_EQ(small.first, 1.0);
  EXPECT_DOUBLE_EQ(small.second, 3.0);
}

TEST(Stats, SummaryFencesOutOutliersForNoiseOnly) {
  std::vector<double> x(100, 1.0);
  for (int i = 0; i < 100; ++i) x[i] = 1.0 + 0.001 * (i % 10);
  x.push_back(50.0);  // one preempted sample
  auto s = summarize(x);
  EXPECT_EQ(s.count, 101u);
  EXPECT_EQ(s.outliers, 1u);
  EXPECT_LT(s.rel_noise, 0.01);
  EXPECT_GT(s.stdev / s.mean, 1.0);  // the plain ratio is dominated by the outlier
  EXPECT_DOUBLE_EQ(s.max, 50.0);
  EXPECT_LE(s.median_ci_low, s.median);
  EXPECT_GE(s.median_ci_high, s.median);
}

TEST(Stats, RunningStatsMatchesBatch) {
  std::vector<double> x = {1.5, 2.25, 3.0, 10.0, 0.5};
  RunningStats r;
  for (double v : x) r.add(v);
  EXPECT_NEAR(r.mean(), mean(x), 1e-12);
  EXPECT_NEAR(r.stdev(), stdev(x), 1e-12);
  EXPECT_NEAR(r.rel_noise(), stdev(x) / mean(x), 1e-12);
  RunningStats one;
  one.add(1);
  EXPECT_TRUE(std::isinf(one.rel_noise()));
}
