#pragma once
// A synthetic merged tree for the fleet view's tests: five identical GPUs, one slow and one capped.
#include <map>
#include <string>

#include <fmt/format.h>

#include "results/result_set.hpp"
#include "scale/fleet.hpp"
#include "tests/result_fixtures.hpp"

namespace opmeter::fixtures {

inline const char* kGemm = "gemm/cublaslt/bf16/M=64,N=64,K=64/device=cuda:0";
inline const char* kSilu = "silu/opmeter/bf16/batch=1,seq=8,hidden=64/device=cuda:0";

// One H100 board of default limit 700 W, capped at `cap` W.
inline nlohmann::json gpu_run_context(const std::string& host, double cap) {
  return {{"host_name", host},
          {"cuda", {{"nvml_driver", "550.54"}}},
          {"gpus", {{{"device", "cuda:0"}, {"name", "H100"}, {"sm_clock_default_mhz", 1755},
                     {"power_limit_default_w", 700}, {"power_limit_w", cap}, {"ecc_enabled", true}, {"mig_enabled", false}}}}};
}

inline Result on(const std::string& machine, const std::string& case_string, double median_s) {
  Result r = measured(case_string, median_s);
  r.case_string = case_string;
  r.summary.median = median_s;  // exact, so that the expected numbers below are too
  r.details[kMachineDetail] = machine;
  return r;
}

// Five identical boards: a, b, c as they should be, d slow, e capped at 500 W (slow on the
// compute-bound GEMM, not on the memory-bound SiLU).
inline ResultSet fleet_set() {
  std::map<std::string, std::pair<double, double>> times = {
      {"a", {1.00e-3, 2.00e-5}}, {"b", {1.02e-3, 2.10e-5}}, {"c", {0.98e-3, 2.05e-5}},
      {"d", {1.30e-3, 2.60e-5}}, {"e", {1.15e-3, 2.02e-5}}};
  ResultSet set{"tree", ResultsFormat::results_jsonl, {{"fleet", nlohmann::json::array()}}, {}};
  for (auto& [m, t] : times) {
    set.context["fleet"].push_back({{"name", m}, {"device", "cuda:0"}, {"context", gpu_run_context(m, m == "e" ? 500 : 700)}});
    set.results.push_back(on(m, kGemm, t.first));
    set.results.push_back(on(m, kSilu, t.second));
  }
  return set;
}

// A large fleet, `machines` identical boards x `cases` cases, every seventh machine 10% slow:
// for checking the section stays usable (size, drawing) at the scale of a GPU cluster.
inline ResultSet big_fleet(int machines, int cases) {
  ResultSet set{"big", ResultsFormat::results_jsonl, {{"fleet", nlohmann::json::array()}}, {}};
  for (int m = 0; m < machines; ++m) {
    auto name = fmt::format("rank{:03}-of-{}-node{:02}-cuda:{}", m, machines, m / 8, m % 8);
    set.context["fleet"].push_back({{"name", name}, {"device", "cuda:0"}, {"context", gpu_run_context(name, 700)}});
    for (int c = 0; c < cases; ++c)
      set.results.push_back(on(name, fmt::format("gemm/cublaslt/bf16/M={},N=4096,K=4096/device=cuda:0", 64 * (c + 1)),
                               1e-4 * (c + 1) * (m % 7 == 3 ? 1.1 : 1 + 0.001 * (m % 5))));
  }
  return set;
}

}  // namespace opmeter::fixtures
