#pragma once
// k-fold cross-validation's bookkeeping: folds, errors on held-out cases, prediction intervals
// and how often they hold.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace opmeter::predict {

// Assigns n cases to k folds of sizes differing by at most one, shuffled by seed: the same
// inputs always give the same folds. std::invalid_argument when k < 2 or n < k.
std::vector<int> assign_folds(std::size_t n, int k, std::uint64_t seed);

struct WorstCase {
  std::string case_string;
  double measured_s = 0, predicted_s = 0;
  double ape = 0;  // |predicted - measured| / measured
};

// Held-out error of one model on one group (or on several pooled).
struct ErrorStats {
  std::size_t n = 0;
  double median_ape = 0, p90_ape = 0, mean_ape = 0, max_ape = 0;  // fractions: 0.1 is 10%
  // The prediction interval as factors on the prediction: [pred * lo, pred * hi] holds the 5th
  // to 95th percentile of measured / predicted over all held-out cases.
  double lo = 1, hi = 1;
  // The median of measured / predicted: what a prediction is multiplied by to be the point
  // estimate. lo <= median_ratio <= hi, so the point lies inside its interval even for a model
  // that is off by a steady factor (the roofline, a lower bound).
  double median_ratio = 1;
  // Share of held-out cases inside the interval computed from the other folds' cases only.
  double coverage = 0;
  std::vector<WorstCase> worst;  // the largest errors, up to 5, worst first

  nlohmann::json to_json() const;
  static ErrorStats from_json(const nlohmann::json& j);  // UsageError when malformed
};

// Statistics of out-of-fold predictions: names, measured and predicted seconds and the fold of
// each case, all the same length. std::invalid_argument when lengths differ, n == 0 or a time is
// not positive and finite. Coverage counts a case only when other folds give an interval.
ErrorStats error_stats(const std::vector<std::string>& names, const std::vector<double>& measured,
                       const std::vector<double>& predicted, const std::vector<int>& folds);

// Percentile (0..100) of values by linear interpolation; std::invalid_argument when empty.
double percentile(std::vector<double> values, double pct);

}  // namespace opmeter::predict
