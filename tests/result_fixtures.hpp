#pragma once
// Results built by hand for report, chart and compare tests: known samples, known work.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "opmeter/registry.hpp"
#include "opmeter/result.hpp"
#include "opmeter/stats.hpp"

namespace opmeter::fixtures {

// `n` samples spread uniformly by +-`spread` (relative) around `center_s`, reproducible by seed.
inline std::vector<double> samples_around(double center_s, std::size_t n, double spread, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-spread, spread);
  std::vector<double> s(n);
  for (auto& v : s) v = center_s * (1 + u(rng));
  return s;
}

// A measured (ok) result with rates derived from its work and samples.
inline Result measured(const std::string& case_string, std::vector<double> samples, Work work = {}) {
  Result r;
  r.case_string = case_string;
  r.kase = parse_case(case_string);
  r.case_string = r.kase.to_string();
  r.status = Status::ok;
  r.samples = std::move(samples);
  r.summary = summarize(r.samples);
  r.work = work;
  r.calls = r.samples.size();
  derive_rates(r);
  return r;
}

inline Result measured(const std::string& case_string, double median_s, Work work = {}, unsigned seed = 1) {
  return measured(case_string, samples_around(median_s, 20, 0.002, seed), work);
}

inline Result with_status(const std::string& case_string, Status status, const std::string& reason) {
  Result r;
  r.kase = parse_case(case_string);
  r.case_string = r.kase.to_string();
  r.status = status;
  r.reason = reason;
  return r;
}

// An ok result with a median and its op's own work model (fusion-table tests).
inline Result timed(const std::string& case_string, double median_s) {
  Result r;
  r.kase = parse_case(case_string);
  r.case_string = case_string;
  r.summary.median = median_s;
  r.work = Registry::global().op(r.kase.op)->work(r.kase);
  return r;
}

// GEMM work: 2MNK flops, A and B read, C written (fp32).
inline Work gemm_work(double m, double n, double k, double elem = 4) {
  return {2 * m * n * k, (m * k + k * n) * elem, m * n * elem};
}

// A time for a GEMM that runs at `gflops`.
inline double time_at(const Work& w, double gflops) { return w.flops / (gflops * 1e9); }

}  // namespace opmeter::fixtures
