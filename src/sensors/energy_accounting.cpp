// Energy from polled counter and power readings: pure functions, no NVML.
#include <algorithm>

#include "opmeter/sensor.hpp"

namespace opmeter {

std::optional<double> counter_energy_j(const std::vector<CounterRead>& reads, double t_begin, double t_end,
                                       std::size_t min_updates) {
  if (reads.size() < 2 || !(t_end > t_begin)) return std::nullopt;
  // A step is first seen at the read after it happened; both ends are late by the same poll
  // interval on average, so the rate between them is unbiased.
  std::optional<CounterRead> first, last;
  std::size_t steps = 0;
  for (std::size_t i = 1; i < reads.size(); ++i) {
    if (reads[i].mj < reads[i - 1].mj) return std::nullopt;  // reset or wrap: not trustworthy
    if (reads[i].mj == reads[i - 1].mj) continue;
    ++steps;
    if (!first) first = reads[i];
    last = reads[i];
  }
  if (steps < min_updates || !(last->t_s > first->t_s)) return std::nullopt;
  double watts = (last->mj - first->mj) / 1000.0 / (last->t_s - first->t_s);
  return watts * (t_end - t_begin);
}

std::optional<double> integrate_power_j(const std::vector<PowerRead>& reads, double t_begin, double t_end) {
  if (reads.empty() || !(t_end > t_begin)) return std::nullopt;
  // Power as a function of time: linear between samples, held flat before the first and after
  // the last.
  auto at = [&](double t) {
    if (t <= reads.front().t_s) return reads.front().watts;
    if (t >= reads.back().t_s) return reads.back().watts;
    auto hi = std::lower_bound(reads.begin(), reads.end(), t, [](const PowerRead& r, double x) { return r.t_s < x; });
    auto lo = hi - 1;
    double f = (t - lo->t_s) / (hi->t_s - lo->t_s);
    return lo->watts + f * (hi->watts - lo->watts);
  };
  std::vector<double> knots = {t_begin};
  for (auto& r : reads)
    if (r.t_s > t_begin && r.t_s < t_end) knots.push_back(r.t_s);
  knots.push_back(t_end);
  double joules = 0;
  for (std::size_t i = 1; i < knots.size(); ++i) joules += 0.5 * (at(knots[i - 1]) + at(knots[i])) * (knots[i] - knots[i - 1]);
  return joules;
}

}  // namespace opmeter
