#pragma once
// The two models that know the machine: the roofline (no fitting) and the analytic model
// (roofline plus the effects that dominate real kernels, with a few fitted constants).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/ceilings.hpp"
#include "predict/sample.hpp"

namespace opmeter::predict {

// max(flops / peak of the dtype, bytes / memory bandwidth), in seconds. Without a peak for the
// dtype, bytes / bandwidth alone.
double roofline_time(const Sample& s, const Ceilings& c);

// Roofline with: a fixed cost per call (launch, threading), compute and memory efficiencies,
// small-M/N/K efficiency, and for ops with a GEMM view tile padding and the imbalance of tiles
// over threads (CPU) or waves over SMs (GPU). Its constants are fitted per group on log error.
struct AnalyticModel {
  std::map<std::string, double> constants;  // by name; see analytic.cpp for each one's meaning

  double predict(const Sample& s, const Ceilings& c) const;
  // Fits the constants to the group's measured samples (all of one device, op, impl, dtype).
  static AnalyticModel fit(const std::vector<Sample>& group, const Ceilings& c);
  nlohmann::json to_json() const;
  static AnalyticModel from_json(const nlohmann::json& j);
};

}  // namespace opmeter::predict
