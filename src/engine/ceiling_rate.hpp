#pragma once
// What a ceiling case (peak, bandwidth) says the machine can do. Others taking the CPUs, or a
// co-tenant VM sharing the cores without showing as steal, only ever slow samples down, and the
// median of a ceiling measured that way bounds every later result too low (they come out
// faster-than-peak). The rate of its fastest tenth of samples is what the machine does when left
// alone, and a tenth is enough samples to be no timer accident.
#include <algorithm>
#include <cmath>
#include <vector>

#include "opmeter/result.hpp"

namespace opmeter {

// How ceilings are taken, as a calibration profile records it (profiles without it hold medians).
inline constexpr const char* kCeilingRule = "rate of the fastest tenth of samples (the median's below 10 samples)";

// Below this many samples the median's rate stands.
inline constexpr std::size_t kCeilingMinSamples = 10;

// The rate (r.gflops or r.gbps, given: at the median) at the 10th percentile of the per-call
// times (nearest rank); the rate as given with fewer samples than kCeilingMinSamples.
inline double ceiling_rate(const Result& r, double rate_at_median) {
  if (r.samples.size() < kCeilingMinSamples || !(r.summary.median > 0) || !(rate_at_median > 0)) return rate_at_median;
  std::vector<double> t = r.samples;
  const std::size_t rank = static_cast<std::size_t>(std::ceil(0.1 * double(t.size()))) - 1;
  std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(rank), t.end());
  const double fast = t[rank];
  return fast > 0 ? rate_at_median * r.summary.median / fast : rate_at_median;
}
inline double ceiling_gflops(const Result& r) { return ceiling_rate(r, r.gflops); }
inline double ceiling_gbps(const Result& r) { return ceiling_rate(r, r.gbps); }

}  // namespace opmeter
