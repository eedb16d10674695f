#include "engine/calibration_profile.hpp"

#include <fmt/format.h>

#include "opmeter/dtype.hpp"
#include "opmeter/errors.hpp"
#include "engine/runner.hpp"

namespace opmeter {
namespace {

double positive(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number() || !(j.get<double>() > 0))
    throw UsageError(fmt::format("{} must be a positive number, got {}", what, j.dump()));
  return j.get<double>();
}

}  // namespace

nlohmann::json CalibrationProfile::to_json() const {
  nlohmann::json j = {
      {"schema", kCalibrationSchema},
      {"created", created},
      {"threads", threads},
      {"device", device},
      {"peak_gflops", peak_gflops},
      {"bandwidth",
       {{"memory_gbps", bandwidth.memory_gbps},
        {"array_bytes", bandwidth.array_bytes},
        {"kernels", bandwidth.kernels},
        {"caches", bandwidth.caches},
        {"note", bandwidth.note}}},
  };
  if (!ceiling_rule.empty()) j["ceiling_rule"] = ceiling_rule;  // an older profile read back stays as it was
  if (!fusion.is_null()) j["fusion"] = fusion;
  if (!context.is_null()) j["context"] = context;
  return j;
}

CalibrationProfile CalibrationProfile::from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.value("schema", "") != kCalibrationSchema) {
    // Say what the file is where it says so itself (a predict model, check.json, results), as the
    // commands that read those files do when given a profile.
    const std::string schema =
        j.is_object() && j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
    std::string what = "not an opmeter calibration profile";
    if (schema.starts_with("opmeter-calibration/"))
      what = fmt::format("this is a calibration profile of another opmeter ({})", schema);
    else if (schema.starts_with("opmeter-"))
      what = fmt::format("this is an opmeter file of another kind ({}), not a calibration profile", schema);
    else if (j.is_object() && j.contains("benchmarks"))
      what = "these are results (opmeter run writes them), not a calibration profile";
    throw UsageError(
        fmt::format("{} (expected \"schema\": \"{}\", as opmeter calibrate writes)", what, kCalibrationSchema));
  }
  try {
    CalibrationProfile p;
    p.created = j.value("created", "");
    p.threads = j.at("threads").get<int>();
    p.device = j.value("device", std::string(kHostDevice));
    p.ceiling_rule = j.value("ceiling_rule", "");
    const auto& peaks = j.at("peak_gflops");
    if (!peaks.is_object()) throw UsageError("peak_gflops must be an object by dtype, got " + peaks.dump());
    for (auto& [name, v] : peaks.items()) {
      if (!parse_dtype(name)) throw UsageError(fmt::format("unknown dtype '{}' in peak_gflops", name));
      p.peak_gflops[name] = positive(v, "peak_gflops." + name);
    }
    const auto& bw = j.at("bandwidth");
    p.bandwidth.memory_gbps = positive(bw.at("memory_gbps"), "bandwidth.memory_gbps");
    p.bandwidth.array_bytes = bw.value("array_bytes", 0.0);
    if (bw.contains("kernels")) p.bandwidth.kernels = bw["kernels"].get<std::map<std::string, double>>();
    if (bw.contains("caches")) p.bandwidth.caches = bw["caches"];
    p.bandwidth.note = bw.value("note", "");
    if (j.contains("fusion")) p.fusion = j["fusion"];
    if (j.contains("context")) p.context = j["context"];
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("calibration profile is malformed: ") + e.what());
  }
}

}  // namespace opmeter
