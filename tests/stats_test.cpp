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
  // Fewer than 6: no interval (min..max would cover the median 75% of the time at 3 samples).
  auto small = median_ci95({3, 1, 2});
  EXPECT_TRUE(std::isnan(small.first) && std::isnan(small.second));
  EXPECT_TRUE(std::isinf(summarize({3, 1, 2}).precision));
  EXPECT_TRUE(std::isinf(median_precision({1, 2, 3, 4, 5})));
  EXPECT_TRUE(std::isfinite(median_precision({1, 2, 3, 4, 5, 6})));
}

// The interval's coverage, computed independently: with continuous samples, the order
// statistics of ranks lo and hi bracket the true median unless fewer than lo, or at least hi,
// samples fall below it: 1 - 2 P(Bin(n, 1/2) < lo) when the ranks are symmetric. From 6
// samples on, every interval opmeter gives covers it at least 94.5% of the time.
TEST(Stats, MedianIntervalCoversTheMedianFromSixSamplesOn) {
  for (int n = static_cast<int>(kMinSamplesForMedianCi); n <= 200; ++n) {
    std::vector<double> x;
    for (int i = 1; i <= n; ++i) x.push_back(i);
    auto [lo, hi] = median_ci95(x);  // values = 1-based ranks
    // P(fewer than lo below the median) + P(at least hi below it), each binomial(n, 1/2).
    std::vector<double> pmf(n + 1);
    double c = std::pow(0.5, n);
    for (int k = 0; k <= n; ++k) {
      pmf[k] = c;
      c = c * (n - k) / (k + 1);
    }
    double miss = 0;
    for (int k = 0; k <= n; ++k)
      if (k < lo || k >= hi) miss += pmf[k];
    EXPECT_GE(1 - miss, 0.945) << n;
  }
}

namespace {
std::vector<double> one_to(int n) {
  std::vector<double> x;
  for (int i = n; i >= 1; --i) x.push_back(i);  // unsorted; value i is the order statistic of rank i
  return x;
}
}  // namespace

TEST(Stats, MedianConfidenceIntervalRanksOfOddAndSmallSamples) {
  // Conover's ranks n/2 -+ 1.96 sqrt(n)/2 (the upper one + 1), rounded, 1-based:
  // n = 7: 3.5 - 2.593 = 0.907 -> 1 and 1 + 3.5 + 2.593 = 7.09 -> 7.
  EXPECT_EQ(median_ci95(one_to(7)), std::make_pair(1.0, 7.0));
  // n = 25: 12.5 - 4.9 = 7.6 -> 8 and 1 + 12.5 + 4.9 = 18.4 -> 18.
  EXPECT_EQ(median_ci95(one_to(25)), std::make_pair(8.0, 18.0));
  // n = 101: 50.5 - 9.849 = 40.65 -> 41 and 1 + 50.5 + 9.849 = 61.35 -> 61.
  EXPECT_EQ(median_ci95(one_to(101)), std::make_pair(41.0, 61.0));
}

// An independent property of the interval: [X(lo), X(hi)] holds the true median unless fewer than
// lo or at least hi samples fall below it. The count below is Binomial(n, 1/2), so the coverage
// is sum_{k = lo}^{hi - 1} C(n, k) / 2^n, which must be at least 95% for every n > 5 (n <= 5
// gives the full range, which covers 1 - 2 / 2^n: 93.75% at n = 5, as documented).
TEST(Stats, MedianConfidenceIntervalCoversTheMedianWithAtLeast95Percent) {
  for (int n = 6; n <= 300; ++n) {
    auto [lo, hi] = median_ci95(one_to(n));
    double coverage = 0;
    for (int k = int(lo); k < int(hi); ++k)
      coverage += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) - n * std::log(2.0));
    EXPECT_GE(coverage, 0.95) << "n = " << n << ": ranks " << lo << " and " << hi;
  }
}

TEST(Stats, SummaryFencesOutOutliersForNoiseOnly) {
  std::vector<double> x(100, 1.0);
  for (int i = 0; i < 100; ++i) x[i] = 1.0 + 0.001 * (i % 10);
  x.push_back(50.0);  // one preempted sample
  auto s = summarize(x);
  EXPECT_EQ(s.count, 101u);
  EXPECT_EQ(s.outliers, 1u);
  // The 100 kept values are 1.000 ... 1.009, ten of each: mean 1.0045, squared deviations
  // 10 x 1e-6 x sum_{k=0}^{9} (k - 4.5)^2 = 8.25e-4, sample variance 8.25e-4 / 99, so
  // rel_noise = sqrt(8.25e-4 / 99) / 1.0045 = 0.0028738191597.
  EXPECT_NEAR(s.rel_noise, std::sqrt(8.25e-4 / 99) / 1.0045, 1e-12);
  EXPECT_NEAR(s.rel_noise, 0.0028738191597, 1e-12);
  EXPECT_GT(s.stdev / s.mean, 1.0);  // the plain ratio is dominated by the outlier
  EXPECT_DOUBLE_EQ(s.max, 50.0);
  // n = 101: ranks 41 and 61 of the sorted samples (ten 1.000, ten 1.001, ...): 1.004 and 1.006.
  EXPECT_DOUBLE_EQ(s.median_ci_low, 1.0 + 0.001 * 4);
  EXPECT_DOUBLE_EQ(s.median_ci_high, 1.0 + 0.001 * 6);
  EXPECT_DOUBLE_EQ(s.median, 1.0 + 0.001 * 5);  // the 51st of 101
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

// Exact two-sided p-values, checked against full enumeration of the rank arrangements.
TEST(MannWhitney, ExactSmallSamples) {
  auto separated = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(separated.exact);
  EXPECT_DOUBLE_EQ(separated.u, 0.0);
  EXPECT_NEAR(separated.p_value, 2.0 / 252.0, 1e-12);  // one arrangement in C(10,5) per tail

  auto interleaved = mann_whitney_u({1, 3, 5, 7}, {2, 4, 6, 8, 9, 10});
  EXPECT_TRUE(interleaved.exact);
  EXPECT_DOUBLE_EQ(interleaved.u, 6.0);
  EXPECT_NEAR(interleaved.p_value, 0.2571428571428571, 1e-12);  // 54 of 210 arrangements

  // Swapping the samples mirrors U and keeps p.
  auto swapped = mann_whitney_u({2, 4, 6, 8, 9, 10}, {1, 3, 5, 7});
  EXPECT_DOUBLE_EQ(swapped.u, 24.0 - 6.0);
  EXPECT_NEAR(swapped.p_value, interleaved.p_value, 1e-12);
}

TEST(MannWhitney, NormalApproximationWithTies) {
  // Identical samples: no evidence at all.
  std::vector<double> same(50, 1.0);
  auto flat = mann_whitney_u(same, same);
  EXPECT_FALSE(flat.exact);
  EXPECT_DOUBLE_EQ(flat.p_value, 1.0);

  // 30 vs 30 fully separated: U = 0, z = (450 - 0.5) / sqrt(30*30*61/12) = 6.66.
  std::vector<double> lo, hi;
  for (int i = 0; i < 30; ++i) {
    lo.push_back(i);
    hi.push_back(100 + i);
  }
  auto sep = mann_whitney_u(lo, hi);
  EXPECT_FALSE(sep.exact);
  EXPECT_DOUBLE_EQ(sep.u, 0.0);
  EXPECT_NEAR(sep.p_value, std::erfc(449.5 / std::sqrt(30.0 * 30 * 61 / 12) / std::sqrt(2.0)), 1e-15);
  EXPECT_LT(sep.p_value, 1e-10);

  // Beyond 10 a side, ties shrink the variance: 11 x {1,1,2,2,...} vs {2,2,3,3,...}.
  std::vector<double> tx, ty;
  for (int i = 0; i < 6; ++i) tx.insert(tx.end(), {1, 2}), ty.insert(ty.end(), {2, 3});
  auto tied = mann_whitney_u(tx, ty);
  EXPECT_FALSE(tied.exact);
  EXPECT_DOUBLE_EQ(tied.u, 18.0);  // 36 pairs 1 < 2 or 3 add 0; each x 2 against each y 2 adds a half
  // Ranks: six 1s, twelve 2s, six 3s in 24 values: tie term 3 * (t^3 - t).
  double var = 12.0 * 12 / 12 * (25 - ((216.0 - 6) * 2 + (1728 - 12)) / (24.0 * 23));
  EXPECT_NEAR(tied.p_value, std::erfc((72 - 18 - 0.5) / std::sqrt(var) / std::sqrt(2.0)), 1e-12);
}

// The p of every split of the pooled values into m and n, counted one by one: the permutation
// test the exact path computes, independently (bit masks, U by pair counting).
double enumerated_p(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> pool = x;
  pool.insert(pool.end(), y.begin(), y.end());
  const std::size_t m = x.size(), N = pool.size();
  auto u_of = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double u = 0;
    for (double va : a)
      for (double vb : b) u += va > vb ? 1 : va == vb ? 0.5 : 0;
    return u;
  };
  const double mid = double(m) * double(N - m) / 2, seen = std::abs(u_of(x, y) - mid);
  double extreme = 0, all = 0;
  for (unsigned mask = 0; mask < (1u << N); ++mask) {
    if (std::size_t(__builtin_popcount(mask)) != m) continue;
    std::vector<double> a, b;
    for (std::size_t i = 0; i < N; ++i) (mask >> i & 1 ? a : b).push_back(pool[i]);
    all += 1;
    extreme += std::abs(u_of(a, b) - mid) >= seen - 1e-9;
  }
  return extreme / all;
}

// Small samples with ties are tested exactly too: at 3 a side no arrangement is rarer than
// 2 / C(6, 3), so timer-quantised samples ({1,1,1} vs {2,2,2}) are no `slower` at alpha 0.05.
TEST(MannWhitney, ExactWithTies) {
  auto quantised = mann_whitney_u({1, 1, 1}, {2, 2, 2});
  EXPECT_TRUE(quantised.exact);
  EXPECT_NEAR(quantised.p_value, 0.1, 1e-12);
  for (auto [x, y] : std::vector<std::pair<std::vector<double>, std::vector<double>>>{
           {{1, 1, 2, 2}, {2, 2, 3, 3}},
           {{5, 5, 5, 6, 7}, {5, 6, 6, 8, 8, 9}},
           {{1, 2, 2, 3, 3, 3, 4}, {3, 4, 4, 5, 5, 5, 6, 7}},
           {{2, 2, 2}, {2, 2, 2, 2}}}) {
    auto t = mann_whitney_u(x, y);
    EXPECT_TRUE(t.exact);
    EXPECT_NEAR(t.p_value, enumerated_p(x, y), 1e-12) << x.size() << " vs " << y.size();
  }
  // Without ties the same path agrees with the enumeration as well.
  EXPECT_NEAR(mann_whitney_u({1, 3, 5, 7}, {2, 4, 6, 8, 9, 10}).p_value,
              enumerated_p({1, 3, 5, 7}, {2, 4, 6, 8, 9, 10}), 1e-12);
}

TEST(MannWhitney, EmptySampleHasNoEvidence) {
  EXPECT_DOUBLE_EQ(mann_whitney_u({}, {1, 2}).p_value, 1.0);
}

TEST(Stats, Geomean) {
  EXPECT_NEAR(geomean({1.1, 1.1, 1.1}), 1.1, 1e-12);
  EXPECT_NEAR(geomean({0.5, 2.0}), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(geomean({}), 0.0);
}

TEST(Precision, MatchesTheMedianIntervalAndShrinksWithTheSampleCount) {
  std::vector<double> x;
  for (int i = 0; i < 400; ++i) x.push_back(1.0 + 0.02 * ((i * 37) % 101) / 101.0);
  auto s = summarize(x);
  EXPECT_NEAR(median_precision(x), s.precision, 1e-12);
  EXPECT_NEAR(s.precision, (s.median_ci_high - s.median_ci_low) / 2 / s.median, 1e-12);
  std::vector<double> quarter(x.begin(), x.begin() + 100);
  EXPECT_LT(median_precision(x), 0.7 * median_precision(quarter));  // ~1/2 expected for 4x samples
  EXPECT_TRUE(std::isinf(median_precision({1.0})));
  EXPECT_TRUE(std::isinf(median_precision({0.0, 0.0, 0.0})));
  EXPECT_DOUBLE_EQ(median_precision({2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0}), 0.0);
}

TEST(Precision, PlateauWhenFourTimesTheSamplesGainLessThanTenPercent) {
  EXPECT_FALSE(plateaued({}));
  EXPECT_FALSE(plateaued({{100, 0.02}}));
  EXPECT_FALSE(plateaued({{100, 0.02}, {300, 0.019}}));          // not yet 4x the samples
  EXPECT_TRUE(plateaued({{100, 0.02}, {300, 0.019}, {400, 0.019}}));
  EXPECT_FALSE(plateaued({{100, 0.02}, {400, 0.010}}));          // improving as 1/sqrt(n)
  EXPECT_FALSE(plateaued({{100, 0.02}, {400, 0.0179}}));         // 10.5% better: still improving
  EXPECT_TRUE(plateaued({{100, 0.02}, {400, 0.0181}}));
  // The comparison is with the latest checkpoint at a quarter of the count or fewer.
  EXPECT_FALSE(plateaued({{10, 0.05}, {100, 0.02}, {400, 0.01}}));
  EXPECT_FALSE(plateaued({{100, 0.0}, {400, 0.0}}));             // exact: nothing to improve, converged instead
}
