#include "engine/calibration_profile.hpp"

#include <algorithm>
#include <iterator>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// Bounds no real machine passes, so that a hand-edited or corrupted rate (x1000, 1e308) is refused
// instead of making every % of peak quietly tiny. Per logical CPU and cycle, the widest units any
// CPU has (up to four 512-bit FMA pipes; AMX tiles for 16- and 8-bit), at 6 GHz. A GPU: 100
// PFLOP/s and 100 TB/s, about ten times the fastest there is.
constexpr double kMaxCpuGhz = 6;
constexpr double kMaxBytesPerCycle = 192;  // three 64-byte L1 loads
constexpr double kMaxDeviceGflops = 1e8, kMaxDeviceGbps = 1e5;

double most_flop_per_cycle(DType d) {
  switch (size_of(d)) {
    case 8: return 64;     // 4 pipes x 8 lanes x 2 (FMA)
    case 4: return 128;    // 4 pipes x 16 lanes x 2
    case 2: return 2048;   // AMX-BF16/FP16: 1024 FMA a cycle
    default: return 4096;  // AMX-INT8
  }
}

void check_plausible(const CalibrationProfile& p) {
  const bool host = p.device == kHostDevice;
  for (auto& [name, gflops] : p.peak_gflops) {
    const double most = host ? p.threads * most_flop_per_cycle(*parse_dtype(name)) * kMaxCpuGhz : kMaxDeviceGflops;
    if (!(gflops <= most))
      throw UsageError(fmt::format(
          "peak_gflops.{} = {:.6g} GFLOP/s is impossible: above {:.6g}, {}", name, gflops, most,
          host ? fmt::format("the most {} threads reach ({} FLOP a cycle each, the widest units of any CPU, at {} GHz)",
                             p.threads, most_flop_per_cycle(*parse_dtype(name)), kMaxCpuGhz)
               : std::string("about ten times the fastest GPU")));
  }
  const double most = host ? p.threads * kMaxBytesPerCycle * kMaxCpuGhz : kMaxDeviceGbps;
  auto check = [&](const std::string& key, double gbps) {
    if (!(gbps <= most))
      throw UsageError(
          fmt::format("{} = {:.6g} GB/s is impossible: above {:.6g}, {}", key, gbps, most,
                      host ? fmt::format("the most {} threads read ({} bytes a cycle each from L1, at {} GHz)",
                                         p.threads, kMaxBytesPerCycle, kMaxCpuGhz)
                           : std::string("about ten times the fastest GPU")));
  };
  check("bandwidth.memory_gbps", p.bandwidth.memory_gbps);
  for (auto& [kernel, gbps] : p.bandwidth.kernels) check("bandwidth.kernels." + kernel, gbps);
  for (std::size_t i = 0; i < p.bandwidth.caches.size(); ++i)
    if (auto& level = p.bandwidth.caches[i]; level.is_object() && level.contains("read_gbps"))
      check(fmt::format("bandwidth.caches[{}].read_gbps", i), positive(level["read_gbps"], "read_gbps"));
}

// A JSON value short enough to quote in a message.
std::string quoted(const nlohmann::json& j) {
  std::string s = j.dump();
  return s.size() <= 60 ? s : s.substr(0, 57) + "...";
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
    const auto& threads = j.at("threads");
    if (!threads.is_number_integer() || threads < 1 || threads > kMaxProfileThreads)
      throw UsageError(
          fmt::format("threads must be a whole number from 1 to {} (the threads it was measured with), got {}",
                      kMaxProfileThreads, quoted(threads)));
    p.threads = threads.get<int>();
    p.device = j.value("device", std::string(kHostDevice));
    try {
      check_device(p.device);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("device: {}", e.what()));
    }
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
    if (bw.contains("kernels") && !bw["kernels"].is_object())
      throw UsageError("bandwidth.kernels must be an object of GB/s by kernel, got " + quoted(bw["kernels"]));
    if (bw.contains("kernels"))
      for (auto& [kernel, v] : bw["kernels"].items())
        p.bandwidth.kernels[kernel] = positive(v, "bandwidth.kernels." + kernel);
    if (bw.contains("caches")) p.bandwidth.caches = bw["caches"];
    p.bandwidth.note = bw.value("note", "");
    if (j.contains("fusion")) p.fusion = j["fusion"];
    if (!p.fusion.is_null() &&
        !(p.fusion.is_object() && p.fusion.value("patterns", nlohmann::json::array()).is_array()))
      throw UsageError("fusion must be the object opmeter calibrate writes ({\"patterns\": [...], ...}), got " +
                       quoted(p.fusion));
    if (j.contains("context")) p.context = j["context"];
    check_plausible(p);
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("calibration profile is malformed: ") + e.what());
  }
}

namespace {
const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json none;
  return j.is_object() && j.contains(key) ? j[key] : none;
}

std::string gpu_name(const nlohmann::json& context, const std::string& device) {
  for (auto& g : member(context, "gpus"))
    if (member(g, "device") == device && member(g, "name").is_string()) return g["name"].get<std::string>();
  return "";
}
}  // namespace

std::vector<std::string> machine_differences(const CalibrationProfile& p, const nlohmann::json& here) {
  std::vector<std::string> out;
  if (p.device != kHostDevice) {
    const std::string was = gpu_name(p.context, p.device), now = gpu_name(here, p.device);
    if (!was.empty() && !now.empty() && was != now) out.push_back(fmt::format("GPU '{}', here '{}'", was, now));
    return out;
  }
  const auto &was = member(p.context, "cpu"), &now = member(here, "cpu");
  auto differ = [&](const char* key) {
    return !member(was, key).is_null() && !member(now, key).is_null() && member(was, key) != member(now, key);
  };
  if (differ("model"))
    out.push_back(fmt::format("CPU '{}', here '{}'", member(was, "model").get<std::string>(),
                              member(now, "model").get<std::string>()));
  if (differ("logical_cpus"))
    out.push_back(fmt::format("{} logical CPUs, here {}", member(was, "logical_cpus").dump(),
                              member(now, "logical_cpus").dump()));
  // The vector and matrix units only: a kernel or microcode update adds and drops other flags
  // (ibrs, user_shstk, flush_l1d) on the same machine.
  auto flags = [](const nlohmann::json& list) {
    std::set<std::string> s;
    for (auto& f : list)
      if (f.is_string())
        for (const char* unit : {"avx", "amx", "sse", "ssse", "fma", "f16c"})
          if (f.get<std::string>().rfind(unit, 0) == 0) s.insert(f.get<std::string>());
    return s;
  };
  if (member(was, "isa_flags").is_array() && member(now, "isa_flags").is_array()) {
    const auto a = flags(member(was, "isa_flags")), b = flags(member(now, "isa_flags"));
    std::vector<std::string> only_there, only_here;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only_there));
    std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only_here));
    if (!only_there.empty()) out.push_back(fmt::format("ISA {} that this CPU lacks", fmt::join(only_there, " ")));
    if (!only_here.empty()) out.push_back(fmt::format("without ISA {} that this CPU has", fmt::join(only_here, " ")));
  }
  return out;
}

}  // namespace opmeter
