// Cross-validation bookkeeping: folds, percentiles, held-out error statistics and intervals.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "opmeter/errors.hpp"
#include "predict/cross_validation.hpp"

namespace opmeter::predict {
namespace {

TEST(PredictFolds, SizesDifferByAtMostOne) {
  for (std::size_t n : {5u, 7u, 23u, 100u}) {
    for (int k : {2, 3, 5}) {
      auto folds = assign_folds(n, k, 42);
      ASSERT_EQ(folds.size(), n);
      std::vector<std::size_t> sizes(static_cast<std::size_t>(k), 0);
      for (int f : folds) {
        ASSERT_GE(f, 0);
        ASSERT_LT(f, k);
        ++sizes[static_cast<std::size_t>(f)];
      }
      auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_LE(*hi - *lo, 1u) << "n=" << n << " k=" << k;
      EXPECT_GE(*lo, 1u);
    }
  }
}

TEST(PredictFolds, SameSeedSameFoldsOtherSeedOtherFolds) {
  auto a = assign_folds(50, 5, 7);
  EXPECT_EQ(a, assign_folds(50, 5, 7));
  EXPECT_NE(a, assign_folds(50, 5, 8));
}

TEST(PredictFolds, ShuffledNotRoundRobin) {
  auto folds = assign_folds(50, 5, 1);
  std::vector<int> round_robin(50);
  for (int i = 0; i < 50; ++i) round_robin[static_cast<std::size_t>(i)] = i % 5;
  EXPECT_NE(folds, round_robin);
}

// Each case lands in exactly one fold, and the folds together hold every case once.
TEST(PredictFolds, EachCaseHeldOutExactlyOnce) {
  const std::size_t n = 37;
  const int k = 4;
  auto folds = assign_folds(n, k, 3);
  std::multiset<std::size_t> held_out;
  for (int f = 0; f < k; ++f)
    for (std::size_t i = 0; i < n; ++i)
      if (folds[i] == f) held_out.insert(i);
  ASSERT_EQ(held_out.size(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(held_out.count(i), 1u);
}

// A fixed expectation: the folds of a seed must not change between builds or standard libraries
// (a saved model names its folds by seed).
TEST(PredictFolds, StableAcrossBuilds) {
  EXPECT_EQ(assign_folds(10, 3, 20261123), (std::vector<int>{0, 0, 2, 1, 0, 2, 1, 1, 0, 2}));
  EXPECT_EQ(assign_folds(12, 4, 1), (std::vector<int>{1, 3, 2, 0, 2, 2, 3, 3, 1, 0, 1, 0}));
}

TEST(PredictFolds, InvalidArguments) {
  EXPECT_THROW(assign_folds(10, 1, 0), std::invalid_argument);
  EXPECT_THROW(assign_folds(10, 0, 0), std::invalid_argument);
  EXPECT_THROW(assign_folds(4, 5, 0), std::invalid_argument);
  EXPECT_NO_THROW(assign_folds(5, 5, 0));
}

TEST(PredictPercentile, LinearInterpolation) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 50), 2);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0), 1);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 100), 4);
  // 11 values 0..10: the pth percentile is p / 10.
  std::vector<double> v;
  for (int i = 10; i >= 0; --i) v.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 9);
  EXPECT_DOUBLE_EQ(percentile(v, 95), 9.5);
  EXPECT_DOUBLE_EQ(percentile(v, 5), 0.5);
  EXPECT_DOUBLE_EQ(percentile({7}, 37), 7);
  // Position 0.25 * 3 = 0.75 between 10 and 20.
  EXPECT_DOUBLE_EQ(percentile({40, 10, 30, 20}, 25), 17.5);
}

TEST(PredictPercentile, InvalidArguments) {
  EXPECT_THROW(percentile({}, 50), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, -1), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, 101), std::invalid_argument);
}

TEST(PredictErrorStats, HandComputedErrors) {
  // Errors 10%, 20%, 50%, 0%, 30%.
  std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  std::vector<double> measured = {1, 2, 4, 1, 10};
  std::vector<double> predicted = {1.1, 1.6, 6, 1, 13};
  std::vector<int> folds = {0, 1, 0, 1, 0};
  auto s = error_stats(names, measured, predicted, folds);
  EXPECT_EQ(s.n, 5u);
  // Sorted: 0, .1, .2, .3, .5.
  EXPECT_NEAR(s.median_ape, 0.2, 1e-12);
  EXPECT_NEAR(s.p90_ape, 0.3 + 0.6 * 0.2, 1e-12);  // position 3.6
  EXPECT_NEAR(s.mean_ape, 1.1 / 5, 1e-12);
  EXPECT_NEAR(s.max_ape, 0.5, 1e-12);
  ASSERT_EQ(s.worst.size(), 5u);
  EXPECT_EQ(s.worst[0].case_string, "c");
  EXPECT_EQ(s.worst[1].case_string, "e");
  EXPECT_EQ(s.worst[2].case_string, "b");
  EXPECT_EQ(s.worst[3].case_string, "a");
  EXPECT_EQ(s.worst[4].case_string, "d");
  EXPECT_DOUBLE_EQ(s.worst[0].measured_s, 4);
  EXPECT_DOUBLE_EQ(s.worst[0].predicted_s, 6);
  EXPECT_NEAR(s.worst[0].ape, 0.5, 1e-12);
}

TEST(PredictErrorStats, WorstListsAtMostFive) {
  std::vector<std::string> names;
  std::vector<double> measured, predicted;
  std::vector<int> folds;
  for (int i = 0; i < 8; ++i) {
    names.push_back("case" + std::to_string(i));
    measured.push_back(1);
    predicted.push_back(1 + 0.01 * i);
    folds.push_back(i % 2);
  }
  auto s = error_stats(names, measured, predicted, folds);
  ASSERT_EQ(s.worst.size(), 5u);
  EXPECT_EQ(s.worst[0].case_string, "case7");
  EXPECT_EQ(s.worst[4].case_string, "case3");
}

TEST(PredictErrorStats, IntervalFactorsArePercentilesOfMeasuredOverPredicted) {
  // Ratios measured / predicted: 0.5, 1, ..., 1, 2 (11 cases, ratios sorted 0.5, 1 x9, 2).
  std::vector<std::string> names;
  std::vector<double> measured, predicted;
  std::vector<int> folds;
  for (int i = 0; i < 11; ++i) {
    names.push_back(std::to_string(i));
    predicted.push_back(2.0);
    measured.push_back(i == 0 ? 1.0 : i == 10 ? 4.0 : 2.0);
    folds.push_back(i % 2);
  }
  auto s = error_stats(names, measured, predicted, folds);
  // 5th percentile: position 0.5 between 0.5 and 1; 95th: position 9.5 between 1 and 2.
  EXPECT_NEAR(s.lo, 0.75, 1e-12);
  EXPECT_NEAR(s.hi, 1.5, 1e-12);
  EXPECT_NEAR(s.median_ratio, 1.0, 1e-12);  // the 6th of 11 sorted ratios
}

// A model that underestimates every case 20 to 60 times (a roofline, a lower bound): its interval
// lies wholly above 1, and the median ratio, inside it, is what moves its point into it.
TEST(PredictErrorStats, TheMedianRatioLiesInsideTheInterval) {
  std::vector<std::string> names;
  std::vector<double> measured, predicted, ratios;
  std::vector<int> folds;
  for (int i = 0; i < 9; ++i) {
    const double ratio = 20 + 5 * ((i * 4) % 9);  // 20, 40, 60, 35, ...: each of 20..60 in steps of 5 once
    names.push_back(std::to_string(i));
    predicted.push_back(1e-6 * (i + 1));
    measured.push_back(predicted.back() * ratio);
    ratios.push_back(ratio);
    folds.push_back(i % 3);
  }
  std::sort(ratios.begin(), ratios.end());
  auto s = error_stats(names, measured, predicted, folds);
  EXPECT_NEAR(s.median_ratio, ratios[4], 1e-9);  // the middle of 9
  EXPECT_NEAR(s.median_ratio, 40, 1e-9);
  EXPECT_GT(s.lo, 1);
  EXPECT_LE(s.lo, s.median_ratio);
  EXPECT_GE(s.hi, s.median_ratio);
}

// Two folds of three cases each; every fold's interval comes from the other fold's ratios.
TEST(PredictErrorStats, CoverageUsesOtherFoldsOnly) {
  // Fold 0 ratios: 1, 1, 1 -> interval [1, 1]; fold 1 ratios: 0.5, 1, 3 -> 5th percentile
  // 0.5 + 0.1 * 0.5 = 0.55, 95th 1 + 0.9 * 2 = 2.8.
  // Fold 0's cases against [0.55, 2.8]: all three inside. Fold 1's against [1, 1]: only the 1.
  std::vector<std::string> names = {"a", "b", "c", "d", "e", "f"};
  std::vector<double> predicted = {1, 1, 1, 2, 2, 2};
  std::vector<double> measured = {1, 1, 1, 1, 2, 6};
  std::vector<int> folds = {0, 0, 0, 1, 1, 1};
  auto s = error_stats(names, measured, predicted, folds);
  EXPECT_NEAR(s.coverage, 4.0 / 6.0, 1e-12);
  // The pooled interval, from all six ratios (0.5, 1, 1, 1, 1, 3): positions 0.25 and 4.75.
  EXPECT_NEAR(s.lo, 0.625, 1e-12);
  EXPECT_NEAR(s.hi, 2.5, 1e-12);
}

TEST(PredictErrorStats, PerfectPredictionsAreCoveredAndExact) {
  std::vector<std::string> names = {"a", "b", "c", "d"};
  std::vector<double> t = {1e-6, 2e-6, 3e-3, 4};
  auto s = error_stats(names, t, t, {0, 1, 0, 1});
  EXPECT_EQ(s.median_ape, 0);
  EXPECT_EQ(s.max_ape, 0);
  EXPECT_DOUBLE_EQ(s.lo, 1);
  EXPECT_DOUBLE_EQ(s.hi, 1);
  EXPECT_DOUBLE_EQ(s.coverage, 1);
}

TEST(PredictErrorStats, OneFoldHasNoHeldOutInterval) {
  auto s = error_stats({"a", "b"}, {1, 2}, {1, 2}, {0, 0});
  EXPECT_DOUBLE_EQ(s.coverage, 0);
}

TEST(PredictErrorStats, InvalidArguments) {
  EXPECT_THROW(error_stats({}, {}, {}, {}), std::invalid_argument);
  EXPECT_THROW(error_stats({"a"}, {1, 2}, {1, 2}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(error_stats({"a", "b"}, {1, 2}, {1}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(error_stats({"a", "b"}, {1, 2}, {1, 2}, {0}), std::invalid_argument);
  EXPECT_THROW(error_stats({"a", "b"}, {0, 2}, {1, 2}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(error_stats({"a", "b"}, {1, 2}, {-1, 2}, {0, 1}), std::invalid_argument);
  try {
    error_stats({"gemm/x", "b"}, {1, 2}, {0, 2}, {0, 1});
    FAIL() << "a zero prediction must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gemm/x"), std::string::npos) << e.what();
  }
}

TEST(PredictErrorStats, JsonRoundTrip) {
  auto s = error_stats({"a", "b", "c", "d"}, {1, 2, 3, 4}, {1.5, 2.2, 2.9, 4.1}, {0, 1, 0, 1});
  auto back = ErrorStats::from_json(nlohmann::json::parse(s.to_json().dump()));
  EXPECT_EQ(back.n, s.n);
  EXPECT_EQ(back.median_ape, s.median_ape);
  EXPECT_EQ(back.p90_ape, s.p90_ape);
  EXPECT_EQ(back.mean_ape, s.mean_ape);
  EXPECT_EQ(back.max_ape, s.max_ape);
  EXPECT_EQ(back.lo, s.lo);
  EXPECT_EQ(back.hi, s.hi);
  EXPECT_EQ(back.coverage, s.coverage);
  EXPECT_EQ(back.median_ratio, s.median_ratio);
  ASSERT_EQ(back.worst.size(), s.worst.size());
  for (std::size_t i = 0; i < s.worst.size(); ++i) {
    EXPECT_EQ(back.worst[i].case_string, s.worst[i].case_string);
    EXPECT_EQ(back.worst[i].measured_s, s.worst[i].measured_s);
    EXPECT_EQ(back.worst[i].predicted_s, s.worst[i].predicted_s);
    EXPECT_EQ(back.worst[i].ape, s.worst[i].ape);
  }
}

// A model file fitted before the median ratio was kept: 1 where the interval holds it, else the
// interval's nearer end, so the point still lies inside.
TEST(PredictErrorStats, OlderFilesWithoutTheMedianRatioKeepThePointInside) {
  auto j = ErrorStats{}.to_json();
  j.erase("median_ratio");
  j["lo"] = 0.8;
  j["hi"] = 1.3;
  EXPECT_EQ(ErrorStats::from_json(j).median_ratio, 1.0);
  j["lo"] = 16.0;
  j["hi"] = 900.0;
  EXPECT_EQ(ErrorStats::from_json(j).median_ratio, 16.0);
}

TEST(PredictErrorStats, MalformedJsonIsAUsageError) {
  EXPECT_THROW(ErrorStats::from_json(nlohmann::json::parse(R"({"n": 3})")), UsageError);
  EXPECT_THROW(ErrorStats::from_json(nlohmann::json::array()), UsageError);
  auto j = ErrorStats{}.to_json();
  j["median_ape"] = "ten";
  EXPECT_THROW(ErrorStats::from_json(j), UsageError);
}

}  // namespace
}  // namespace opmeter::predict
