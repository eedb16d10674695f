// Mann-Whitney U: the rank test compare uses to decide whether a change is more than noise.
// Timing samples are skewed and have long right tails, so a rank test suits them better than t.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "opmeter/stats.hpp"

namespace opmeter {
namespace {

constexpr std::size_t kExactMaxSize = 10;

// P(U <= u) under H0 for sizes m, n without ties. c(m, n, u) = c(m-1, n, u-n) + c(m, n-1, u): the
// largest value belongs to x (it beats all n values of y) or to y.
double exact_cdf(std::size_t m, std::size_t n, double u) {
  std::size_t max_u = m * n;
  // counts[j][k]: arrangements of i x-values and j y-values with U = k, built up over i.
  std::vector<std::vector<double>> prev(n + 1, std::vector<double>(max_u + 1, 0.0)), cur = prev;
  for (std::size_t j = 0; j <= n; ++j) prev[j][0] = 1;  // i = 0: U is 0
  for (std::size_t i = 1; i <= m; ++i) {
    for (auto& row : cur) std::fill(row.begin(), row.end(), 0.0);
    cur[0][0] = 1;
    for (std::size_t j = 1; j <= n; ++j)
      for (std::size_t k = 0; k <= i * j; ++k)
        cur[j][k] = (k >= j ? prev[j][k - j] : 0.0) + cur[j - 1][k];
    std::swap(prev, cur);
  }
  const auto& dist = prev[n];
  double total = std::accumulate(dist.begin(), dist.end(), 0.0);
  double below = 0;
  for (std::size_t k = 0; k <= max_u && static_cast<double>(k) <= u + 1e-9; ++k) below += dist[k];
  return below / total;
}

}  // namespace

MannWhitney mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y) {
  MannWhitney out;
  const std::size_t m = x.size(), n = y.size(), total = m + n;
  if (m == 0 || n == 0) return out;

  std::vector<std::pair<double, bool>> all;  // value, from x
  all.reserve(total);
  for (double v : x) all.emplace_back(v, true);
  for (double v : y) all.emplace_back(v, false);
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first < b.first; });

  double rank_sum_x = 0, tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < total;) {
    std::size_t j = i;
    while (j < total && all[j].first == all[i].first) ++j;
    double t = static_cast<double>(j - i), avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_x += avg_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dt = static_cast<double>(total);
  out.u = rank_sum_x - dm * (dm + 1) / 2;

  if (!ties && m <= kExactMaxSize && n <= kExactMaxSize) {
    // Two-sided: twice the smaller tail (the distribution is symmetric about mn/2).
    double u_small = std::min(out.u, dm * dn - out.u);
    out.p_value = std::min(1.0, 2 * exact_cdf(m, n, u_small));
    out.exact = true;
    return out;
  }
  double mu = dm * dn / 2;
  double var = dm * dn / 12 * ((dt + 1) - tie_term / (dt * (dt - 1)));
  if (!(var > 0)) return out;  // every value equal: no evidence of a difference
  double z = std::max(0.0, std::abs(out.u - mu) - 0.5) / std::sqrt(var);
  out.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return out;
}

double geomean(const std::vector<double>& x) {
  if (x.empty()) return 0;
  double log_sum = 0;
  for (double v : x) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(x.size()));
}

}  // namespace opmeter
