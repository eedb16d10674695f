// Mann-Whitney U: the rank test compare uses to decide whether a change is more than noise.
// Timing samples are skewed and have long right tails, so a rank test suits them better than t.
#include <algorithm>
#include <cmath>
#include <vector>

#include "opmeter/stats.hpp"

namespace opmeter {
namespace {

constexpr std::size_t kExactMaxSize = 10;

// The exact two-sided p of rank sum `observed` (doubled: midranks of ties are halves) of m values
// among the doubled midranks `ranks`, conditional on those ranks: the share of the C(N, m) ways of
// choosing m of them whose sum lies at least as far from its mean. With ties this is the
// permutation test of the tied data, which the normal approximation is not at 3 a side (it gave
// {1,1,1} vs {2,2,2} p = 0.047; the exact p is 2 / C(6, 3) = 0.1).
double exact_p(const std::vector<long>& ranks, std::size_t m, long observed) {
  long total_sum = 0;
  for (long r : ranks) total_sum += r;
  // ways[k][s]: subsets of k of the ranks seen so far with sum s.
  std::vector<std::vector<double>> ways(m + 1, std::vector<double>(static_cast<std::size_t>(total_sum) + 1, 0.0));
  ways[0][0] = 1;
  for (long r : ranks)
    for (std::size_t k = m; k >= 1; --k)
      for (long s = total_sum; s >= r; --s) ways[k][s] += ways[k - 1][s - r];
  // Twice the distance from the mean sum m * total / N, in units of 1 / N (integers: no rounding).
  const long n = static_cast<long>(ranks.size()), mm = static_cast<long>(m);
  auto distance = [&](long sum) { return std::abs(sum * n - mm * total_sum); };
  const long seen = distance(observed);
  double extreme = 0, all = 0;
  for (long s = 0; s <= total_sum; ++s) {
    all += ways[m][s];
    if (distance(s) >= seen) extreme += ways[m][s];
  }
  return std::min(1.0, extreme / all);
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
  std::vector<long> doubled_ranks;  // each value's midrank x 2, for the exact test
  doubled_ranks.reserve(total);
  for (std::size_t i = 0; i < total;) {
    std::size_t j = i;
    while (j < total && all[j].first == all[i].first) ++j;
    double t = static_cast<double>(j - i), avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (std::size_t k = i; k < j; ++k) {
      if (all[k].second) rank_sum_x += avg_rank;
      doubled_ranks.push_back(static_cast<long>(i + 1 + j));
    }
    if (t > 1) tie_term += t * t * t - t;
    i = j;
  }
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dt = static_cast<double>(total);
  out.u = rank_sum_x - dm * (dm + 1) / 2;

  if (m <= kExactMaxSize && n <= kExactMaxSize) {
    out.p_value = exact_p(doubled_ranks, m, std::lround(2 * rank_sum_x));
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
