// k-fold bookkeeping. Folds are shuffled by our own Fisher-Yates over std::mt19937_64, whose
// output the standard fixes, so a seed gives the same folds with every standard library
// (std::shuffle and std::uniform_int_distribution are free to differ between them).
#include "predict/cross_validation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter::predict {

namespace {

// Uniform in [0, bound] without modulo bias: draws above the largest whole multiple of the range
// are rejected.
std::uint64_t uniform_upto(std::mt19937_64& rng, std::uint64_t bound) {
  if (bound == std::numeric_limits<std::uint64_t>::max()) return rng();
  const std::uint64_t range = bound + 1;
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % range;
  std::uint64_t v;
  do v = rng();
  while (v >= limit);
  return v % range;
}

bool positive_finite(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

std::vector<int> assign_folds(std::size_t n, int k, std::uint64_t seed) {
  if (k < 2) throw std::invalid_argument("cross-validation needs at least 2 folds, not " + std::to_string(k));
  if (n < static_cast<std::size_t>(k))
    throw std::invalid_argument(std::to_string(k) + " folds need at least " + std::to_string(k) + " cases, not " +
                                std::to_string(n));
  // Round-robin labels give sizes differing by at most one; shuffling them keeps the sizes.
  std::vector<int> folds(n);
  for (std::size_t i = 0; i < n; ++i) folds[i] = static_cast<int>(i % static_cast<std::size_t>(k));
  std::mt19937_64 rng(seed);
  for (std::size_t i = n - 1; i > 0; --i) std::swap(folds[i], folds[uniform_upto(rng, i)]);
  return folds;
}

double percentile(std::vector<double> values, double pct) {
  if (values.empty()) throw std::invalid_argument("percentile of no values");
  if (!(pct >= 0 && pct <= 100)) throw std::invalid_argument("percentile must be within 0..100");
  std::sort(values.begin(), values.end());
  const double pos = pct / 100 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(pos));
  if (below + 1 >= values.size()) return values.back();
  const double frac = pos - static_cast<double>(below);
  return values[below] + frac * (values[below + 1] - values[below]);
}

ErrorStats error_stats(const std::vector<std::string>& names, const std::vector<double>& measured,
                       const std::vector<double>& predicted, const std::vector<int>& folds) {
  const std::size_t n = measured.size();
  if (names.size() != n || predicted.size() != n || folds.size() != n)
    throw std::invalid_argument("error statistics need as many names, predictions and folds as measurements");
  if (n == 0) throw std::invalid_argument("error statistics of no cases");
  for (std::size_t i = 0; i < n; ++i)
    if (!positive_finite(measured[i]) || !positive_finite(predicted[i]))
      throw std::invalid_argument("error statistics need positive finite times; " + names[i] + " has measured " +
                                  std::to_string(measured[i]) + " s, predicted " + std::to_string(predicted[i]) +
                                  " s");

  ErrorStats s;
  s.n = n;
  std::vector<double> ape(n), ratio(n);
  for (std::size_t i = 0; i < n; ++i) {
    ape[i] = std::abs(predicted[i] - measured[i]) / measured[i];
    ratio[i] = measured[i] / predicted[i];
  }
  s.median_ape = percentile(ape, 50);
  s.p90_ape = percentile(ape, 90);
  s.mean_ape = std::accumulate(ape.begin(), ape.end(), 0.0) / static_cast<double>(n);
  s.max_ape = *std::max_element(ape.begin(), ape.end());
  s.lo = percentile(ratio, 5);
  s.hi = percentile(ratio, 95);
  s.median_ratio = percentile(ratio, 50);

  // Coverage as a new case would see it: each fold's cases against the interval of the others.
  // A fold with no other cases has no interval, and its cases count as not covered.
  std::size_t covered = 0;
  std::vector<int> distinct = folds;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int f : distinct) {
    std::vector<double> others;
    for (std::size_t i = 0; i < n; ++i)
      if (folds[i] != f) others.push_back(ratio[i]);
    if (others.empty()) continue;
    const double lo = percentile(others, 5), hi = percentile(others, 95);
    for (std::size_t i = 0; i < n; ++i)
      if (folds[i] == f && ratio[i] >= lo && ratio[i] <= hi) ++covered;
  }
  s.coverage = static_cast<double>(covered) / static_cast<double>(n);

  // Worst first; equal errors keep their input order, so the list is reproducible.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ape[a] > ape[b]; });
  for (std::size_t i = 0; i < std::min<std::size_t>(5, n); ++i) {
    const std::size_t c = order[i];
    s.worst.push_back({names[c], measured[c], predicted[c], ape[c]});
  }
  return s;
}

nlohmann::json ErrorStats::to_json() const {
  nlohmann::json w = nlohmann::json::array();
  for (const auto& c : worst)
    w.push_back({{"case", c.case_string}, {"measured_s", c.measured_s}, {"predicted_s", c.predicted_s}, {"ape", c.ape}});
  return {{"n", n},
          {"median_ape", median_ape},
          {"p90_ape", p90_ape},
          {"mean_ape", mean_ape},
          {"max_ape", max_ape},
          {"lo", lo},
          {"hi", hi},
          {"median_ratio", median_ratio},
          {"coverage", coverage},
          {"worst", w}};
}

ErrorStats ErrorStats::from_json(const nlohmann::json& j) {
  try {
    ErrorStats s;
    s.n = j.at("n").get<std::size_t>();
    s.median_ape = j.at("median_ape").get<double>();
    s.p90_ape = j.at("p90_ape").get<double>();
    s.mean_ape = j.at("mean_ape").get<double>();
    s.max_ape = j.at("max_ape").get<double>();
    s.lo = j.at("lo").get<double>();
    s.hi = j.at("hi").get<double>();
    // Files fitted before median_ratio was kept: 1, or the interval's nearer end when 1 is outside it.
    s.median_ratio = j.value("median_ratio", std::clamp(1.0, std::min(s.lo, s.hi), std::max(s.lo, s.hi)));
    // The interval and the median ratio scale every prediction: each a positive ratio, lo <= hi.
    for (auto [name, v] : {std::pair{"lo", s.lo}, {"hi", s.hi}, {"median_ratio", s.median_ratio}})
      if (!(std::isfinite(v) && v > 0))
        throw UsageError(fmt::format("error statistics: '{}' must be a positive ratio, got {}", name, v));
    if (s.lo > s.hi) throw UsageError(fmt::format("error statistics: lo {} is above hi {}", s.lo, s.hi));
    s.coverage = j.at("coverage").get<double>();
    for (const auto& c : j.at("worst"))
      s.worst.push_back({c.at("case").get<std::string>(), c.at("measured_s").get<double>(),
                         c.at("predicted_s").get<double>(), c.at("ape").get<double>()});
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("error statistics: ") + e.what());
  }
}

}  // namespace opmeter::predict
