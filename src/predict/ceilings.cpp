// A device's ceilings, from a calibration profile or from the ceiling cases of result sets.
#include "predict/ceilings.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "engine/calibration_profile.hpp"
#include "engine/ceiling_rate.hpp"

namespace opmeter::predict {

namespace {

// Where a dtype without a measured peak borrows one: the nearest kind first (the other 16-bit
// float, then the narrower floats' fp32 accumulation), so that a fitted efficiency only has to
// absorb a constant ratio. int8 runs on the same units as the narrow floats on every machine
// opmeter targets, so it borrows theirs too.
const std::vector<DType>& fallbacks(DType d) {
  static const std::map<DType, std::vector<DType>> chains = {
      {DType::fp64, {DType::fp32}},
      {DType::fp32, {DType::tf32, DType::fp64, DType::bf16, DType::fp16}},
      {DType::tf32, {DType::fp32, DType::bf16, DType::fp16}},
      {DType::fp16, {DType::bf16, DType::fp32}},
      {DType::bf16, {DType::fp16, DType::fp32}},
      {DType::fp8_e4m3, {DType::fp16, DType::bf16, DType::fp32}},
      {DType::int8, {DType::fp8_e4m3, DType::bf16, DType::fp16, DType::fp32}},
  };
  static const std::vector<DType> none;
  auto it = chains.find(d);
  return it == chains.end() ? none : it->second;
}

double positive(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number() || !(j.get<double>() > 0)) throw UsageError(fmt::format("{} must be a positive number, got {}", what, j.dump()));
  return j.get<double>();
}

// The GPU of a device in a machine context ("gpus": [{"device": "cuda:0", "sms": .., "l2_bytes": ..}]).
const nlohmann::json* gpu_of(const nlohmann::json& context, const std::string& device) {
  if (!context.is_object() || !context.contains("gpus") || !context["gpus"].is_array()) return nullptr;
  for (const auto& g : context["gpus"])
    if (g.is_object() && g.value("device", "") == device) return &g;
  return nullptr;
}

std::size_t size_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  double v = j[key].get<double>();
  return v > 0 ? static_cast<std::size_t>(v) : 0;
}

// SM count and cache size of a device from a machine context; the host's last-level cache as
// opmeter sized it (llc_bytes_used: a VM may report its host's).
void add_context(Ceilings& c, const nlohmann::json& context) {
  if (!context.is_object()) return;
  if (c.device == kHostDevice) {
    if (context.contains("cpu") && context["cpu"].is_object()) {
      const auto& cpu = context["cpu"];
      c.cache_bytes = size_field(cpu, "llc_bytes_used");
      if (!c.cache_bytes) c.cache_bytes = size_field(cpu, "llc_bytes");
    }
    return;
  }
  if (const nlohmann::json* g = gpu_of(context, c.device)) {
    c.sm_count = static_cast<int>(size_field(*g, "sms"));
    c.cache_bytes = size_field(*g, "l2_bytes");
  }
}

}  // namespace

std::optional<double> Ceilings::peak_for(DType d) const {
  auto measured = [&](DType x) -> std::optional<double> {
    auto it = peak_gflops.find(std::string(to_string(x)));
    if (it != peak_gflops.end() && it->second > 0) return it->second;
    return std::nullopt;
  };
  if (auto p = measured(d)) return p;
  for (DType x : fallbacks(d))
    if (auto p = measured(x)) return p;
  // Any measured peak beats none: the analytic model's efficiency absorbs the ratio.
  std::optional<double> best;
  for (auto& [name, v] : peak_gflops)
    if (v > 0) best = std::max(best.value_or(0.0), v);
  return best;
}

nlohmann::json Ceilings::to_json() const {
  return {{"device", device},       {"peak_gflops", peak_gflops}, {"memory_gbps", memory_gbps},
          {"threads", threads},     {"sm_count", sm_count},       {"cache_bytes", cache_bytes},
          {"source", source}};
}

Ceilings Ceilings::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("ceilings: expected a JSON object, got " + j.dump());
  try {
    Ceilings c;
    c.device = j.at("device").get<std::string>();
    for (auto& [k, v] : j.at("peak_gflops").items()) {
      if (!parse_dtype(k)) throw UsageError(fmt::format("ceilings: unknown dtype '{}' in peak_gflops", k));
      c.peak_gflops[k] = positive(v, "ceilings: peak_gflops." + k);
    }
    c.memory_gbps = j.at("memory_gbps").get<double>();
    c.threads = j.value("threads", 0);
    c.sm_count = j.value("sm_count", 0);
    c.cache_bytes = j.value("cache_bytes", std::size_t{0});
    c.source = j.value("source", "");
    if (c.memory_gbps < 0 || c.threads < 0 || c.sm_count < 0) throw UsageError("ceilings: negative value in " + j.dump());
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("ceilings: malformed ({})", e.what()));
  }
}

Ceilings ceilings_from_profile(const nlohmann::json& profile, const std::string& path) {
  try {
    return ceilings_from_profile(CalibrationProfile::from_json(profile), path);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", path, e.what()));
  }
}

Ceilings ceilings_from_profile(const CalibrationProfile& p, const std::string& path) {
  Ceilings c;
  c.device = p.device;
  c.threads = c.device == kHostDevice ? p.threads : 0;
  c.peak_gflops = p.peak_gflops;
  c.memory_gbps = p.bandwidth.memory_gbps;
  add_context(c, p.context);
  c.source = "calibration profile " + path;
  return c;
}

std::map<std::string, Ceilings> ceilings_from_results(const std::vector<ResultSet>& sets) {
  struct Found {
    std::map<std::string, double> measured_peak, compared_peak;  // by dtype
    double bandwidth_n = -1, bandwidth = 0, compared_bandwidth = 0;
    int ceiling_threads = 0, case_threads = 0;
    nlohmann::json context;
    std::set<std::string> sources;
  };
  std::map<std::string, Found> by_device;
  for (const ResultSet& rs : sets)
    for (const Result& r : rs.results) {
      if (r.status != Status::ok) continue;
      const std::string device = r.kase.device;
      Found& f = by_device[device];
      if (f.context.is_null() || (gpu_of(rs.context, device) && !gpu_of(f.context, device))) f.context = rs.context;
      f.case_threads = std::max(f.case_threads, r.kase.threads);
      const CeilingKind kind = ceiling_of(r.kase.op);
      if (kind == CeilingKind::compute && r.gflops > 0) {
        auto& best = f.measured_peak[std::string(to_string(r.kase.dtype))];
        best = std::max(best, ceiling_gflops(r));
        f.ceiling_threads = std::max(f.ceiling_threads, r.kase.threads);
        f.sources.insert(rs.source);
      } else if (kind == CeilingKind::memory && r.gbps > 0) {
        // The largest arrays measure memory; smaller ones may sit in a cache.
        double n = r.kase.has("n") ? double(r.kase.get_int("n")) : r.work.bytes();
        if (n > f.bandwidth_n) f.bandwidth_n = n, f.bandwidth = 0;
        if (n == f.bandwidth_n) f.bandwidth = std::max(f.bandwidth, ceiling_gbps(r));
        f.ceiling_threads = std::max(f.ceiling_threads, r.kase.threads);
        f.sources.insert(rs.source);
      }
      if (r.peak_gflops && *r.peak_gflops > 0) {
        DType d = r.kase.dtype;
        if (const OpDef* op = Registry::global().op(r.kase.op); op && op->peak_dtype)
          if (auto pd = op->peak_dtype(r.kase)) d = *pd;
        auto& p = f.compared_peak[std::string(to_string(d))];
        p = std::max(p, *r.peak_gflops);
        f.sources.insert(rs.source);
      }
      if (r.bandwidth_gbps && *r.bandwidth_gbps > 0) {
        f.compared_bandwidth = std::max(f.compared_bandwidth, *r.bandwidth_gbps);
        f.sources.insert(rs.source);
      }
    }
  std::map<std::string, Ceilings> out;
  for (auto& [device, f] : by_device) {
    Ceilings c;
    c.device = device;
    c.memory_gbps = f.bandwidth > 0 ? f.bandwidth : f.compared_bandwidth;
    if (c.memory_gbps <= 0) continue;
    c.peak_gflops = f.compared_peak;
    for (auto& [d, v] : f.measured_peak) c.peak_gflops[d] = v;  // measured here beats compared-with
    if (device == kHostDevice) {
      int usable = 0;
      if (f.context.is_object() && f.context.contains("cpu") && f.context["cpu"].is_object())
        usable = static_cast<int>(size_field(f.context["cpu"], "usable_cpus"));
      c.threads = f.ceiling_threads ? f.ceiling_threads : usable ? usable : f.case_threads;
    }
    add_context(c, f.context);
    std::vector<std::string> sources(f.sources.begin(), f.sources.end());
    c.source = fmt::format("ceilings measured in {}", fmt::join(sources, ", "));
    out.emplace(device, std::move(c));
  }
  return out;
}

}  // namespace opmeter::predict
