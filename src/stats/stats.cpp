#include "opmeter/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace opmeter {

double mean(const std::vector<double>& x) {
  if (x.empty()) return 0;
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double stdev(const std::vector<double>& x) {
  if (x.size() < 2) return 0;
  double m = mean(x), ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

double quantile(std::vector<double> x, double q) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  double pos = q * static_cast<double>(x.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = std::min(lo + 1, x.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return x[lo] + (x[hi] - x[lo]) * frac;
}

double median(const std::vector<double>& x) { return quantile(x, 0.5); }

namespace {
// The 0-based ranks of the order statistics that bracket the median of n values with ~95%
// probability: n/2 - 1.96 sqrt(n)/2 and 1 + n/2 + 1.96 sqrt(n)/2, 1-based and rounded (Conover,
// Practical Nonparametric Statistics).
std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n) {
  const double dn = static_cast<double>(n), half = 1.96 * std::sqrt(dn) / 2.0;
  auto rank = [&](double r) {
    return static_cast<std::size_t>(std::clamp(std::lround(r), 1L, static_cast<long>(n)) - 1);
  };
  return {rank(dn / 2.0 - half), rank(1 + dn / 2.0 + half)};
}
}  // namespace

std::pair<double, double> median_ci95(std::vector<double> x) {
  if (x.empty()) return {0, 0};
  if (x.size() < kMinSamplesForMedianCi) return {std::nan(""), std::nan("")};
  std::sort(x.begin(), x.end());
  const auto [lo, hi] = median_ci_ranks(x.size());
  return {x[lo], x[hi]};
}

Summary summarize(const std::vector<double>& x) {
  Summary s;
  s.count = x.size();
  if (x.empty()) return s;
  auto [mn, mx] = std::minmax_element(x.begin(), x.end());
  s.min = *mn;
  s.max = *mx;
  s.mean = mean(x);
  s.stdev = stdev(x);
  s.median = median(x);
  s.q1 = quantile(x, 0.25);
  s.q3 = quantile(x, 0.75);
  std::tie(s.median_ci_low, s.median_ci_high) = median_ci95(x);
  std::tie(s.rel_noise, s.outliers) = fenced_rel_noise(x);
  s.precision = x.size() < kMinSamplesForMedianCi ? std::numeric_limits<double>::infinity()
                : s.median > 0                    ? (s.median_ci_high - s.median_ci_low) / 2 / s.median
                                                  : 0;
  return s;
}

double median_precision(std::vector<double> x) {
  if (x.size() < kMinSamplesForMedianCi) return std::numeric_limits<double>::infinity();
  auto kth = [&](std::size_t k) {  // k-th smallest (0-based); partial sorts keep it O(n)
    std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(k), x.end());
    return x[k];
  };
  const std::size_t n = x.size();
  double med = n % 2 ? kth(n / 2) : (kth(n / 2 - 1) + kth(n / 2)) / 2;
  if (!(med > 0)) return std::numeric_limits<double>::infinity();
  const auto [lo_rank, hi_rank] = median_ci_ranks(n);  // the order statistics of median_ci95
  const double lo = kth(lo_rank), hi = kth(hi_rank);
  return (hi - lo) / 2 / med;
}

bool plateaued(const std::vector<PrecisionCheckpoint>& history, double min_gain) {
  if (history.size() < 2) return false;
  const auto& now = history.back();
  if (!std::isfinite(now.precision)) return false;
  // The latest checkpoint taken at no more than a quarter of today's count.
  for (auto it = history.rbegin() + 1; it != history.rend(); ++it) {
    if (4 * it->samples > now.samples) continue;
    if (!std::isfinite(it->precision) || it->precision <= 0) return false;
    return now.precision > (1 - min_gain) * it->precision;
  }
  return false;
}

std::pair<double, std::size_t> fenced_rel_noise(std::vector<double> x) {
  if (x.size() < 2) return {std::numeric_limits<double>::infinity(), 0};
  double q1 = quantile(x, 0.25), q3 = quantile(x, 0.75), iqr = q3 - q1;
  double lo = q1 - 3 * iqr, hi = q3 + 3 * iqr;
  std::vector<double> kept;
  kept.reserve(x.size());
  for (double v : x)
    if (v >= lo && v <= hi) kept.push_back(v);
  double m = mean(kept);
  return {m > 0 ? stdev(kept) / m : std::numeric_limits<double>::infinity(), x.size() - kept.size()};
}

void RunningStats::add(double x) {
  ++n_;
  double d = x - mean_;
  mean_ += d / static_cast<double>(n_);
  m2_ += d * (x - mean_);
}

double RunningStats::stdev() const {
  return n_ < 2 ? 0 : std::sqrt(m2_ / static_cast<double>(n_ - 1));
}

double RunningStats::rel_noise() const {
  if (n_ < 2 || mean_ <= 0) return std::numeric_limits<double>::infinity();
  return stdev() / mean_;
}

}  // namespace opmeter
