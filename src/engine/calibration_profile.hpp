// The calibration profile `opmeter calibrate` writes and `run --calibration` and `predict fit
// --calibration` read: one type, written and parsed here only.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/ceiling_rate.hpp"
#include "opmeter/case.hpp"

namespace opmeter {

inline constexpr int kMaxProfileThreads = 4096;  // calibrate --threads's limit

struct CalibrationProfile {
  std::string created;               // UTC, ISO 8601 (empty in a profile that lacks it)
  int threads = 0;                   // the host's thread count it was measured with
  std::string device = kHostDevice;  // where it holds: the host or cuda:N
  std::string ceiling_rule = kCeilingRule;  // how its ceilings were taken; empty: medians (older profiles)
  std::map<std::string, double> peak_gflops;  // by dtype name: its fastest peak kernel
  struct Bandwidth {
    double memory_gbps = 0;                    // the fastest streaming kernel's
    double array_bytes = 0;                    // of each streamed array
    std::map<std::string, double> kernels;     // GB/s by bandwidth kernel (copy, triad, ...)
    nlohmann::json caches = nlohmann::json::array();  // [{level, array_bytes, read_gbps}]
    std::string note;
  } bandwidth;
  nlohmann::json fusion;   // analysis/fusion.hpp's fusion_json, as measured (null: none)
  nlohmann::json context;  // the machine context it was measured in (null: none)

  nlohmann::json to_json() const;
  // UsageError saying what is wrong when `j` is no profile: another schema, a missing or
  // malformed field, an unknown dtype or device, threads not a whole number >= 1, a ceiling that
  // is not a positive number or above what any machine reaches.
  static CalibrationProfile from_json(const nlohmann::json& j);
};

// How the machine a profile was measured on (its `context`) differs from `here`, a context of the
// same shape: a host profile's CPU model, logical CPUs and ISA flags; a device profile's GPU name.
// Only what both record is compared; empty when nothing differs.
std::vector<std::string> machine_differences(const CalibrationProfile& p, const nlohmann::json& here);

}  // namespace opmeter
