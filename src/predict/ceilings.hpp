#pragma once
// A device's measured ceilings, as the roofline and analytic models use them.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/calibration_profile.hpp"
#include "opmeter/dtype.hpp"
#include "results/result_set.hpp"

namespace opmeter::predict {

struct Ceilings {
  std::string device = "cpu";                 // cpu, cuda:0, ...
  std::map<std::string, double> peak_gflops;  // by dtype name ("fp32", "bf16", ...)
  double memory_gbps = 0;
  int threads = 0;            // CPU threads the ceilings were measured with; 0 on a GPU
  int sm_count = 0;           // a GPU's streaming multiprocessors; 0 on a CPU
  std::size_t cache_bytes = 0;  // last-level cache (CPU) or L2 (GPU); 0 when unknown
  std::string source;         // "calibration profile PATH" or "ceilings measured in RESULTS"

  // Peak GFLOP/s for a dtype: its own, else the nearest measured one (a narrower float falls back
  // to fp32); nullopt when no peak was measured at all.
  std::optional<double> peak_for(DType d) const;
  nlohmann::json to_json() const;
  static Ceilings from_json(const nlohmann::json& j);  // UsageError when malformed
};

// From an `opmeter calibrate` profile (schema opmeter-calibration/1). UsageError otherwise.
Ceilings ceilings_from_profile(const nlohmann::json& profile, const std::string& path);
Ceilings ceilings_from_profile(const CalibrationProfile& profile, const std::string& path);

// Per device, from the ceiling cases (peak, bandwidth) measured in the result sets and the
// peak_gflops / bandwidth_gbps the results were compared with; SM count and cache size from the
// sets' machine context. Devices without a bandwidth figure are absent.
std::map<std::string, Ceilings> ceilings_from_results(const std::vector<ResultSet>& sets);

}  // namespace opmeter::predict
