#include "opmeter/result.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {
namespace {
constexpr std::array<std::pair<Status, std::string_view>, 6> kStatusNames{{
    {Status::ok, "ok"}, {Status::skipped, "skipped"}, {Status::failed, "failed"},
    {Status::error, "error"}, {Status::crashed, "crashed"}, {Status::timeout, "timeout"},
}};
constexpr double kFasterThanPeakPct = 105.0;

template <class T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <class T>
std::optional<T> get_optional(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<T>();
}
}  // namespace

std::string_view to_string(Status s) {
  for (auto& [st, name] : kStatusNames)
    if (st == s) return name;
  return "?";
}

std::optional<Status> parse_status(std::string_view s) {
  for (auto& [st, name] : kStatusNames)
    if (name == s) return st;
  return std::nullopt;
}

bool Result::has_flag(const std::string& f) const { return std::find(flags.begin(), flags.end(), f) != flags.end(); }

void Result::add_flag(const std::string& f) {
  if (!has_flag(f)) flags.push_back(f);
}

std::string utc_now_iso() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(t));
}

Result unmeasured_result(const Case& c, Status status, std::string reason) {
  Result r;
  r.kase = c;
  r.case_string = c.to_string();
  r.status = status;
  r.reason = std::move(reason);
  r.timestamp = utc_now_iso();
  return r;
}

void derive_rates(Result& r) {
  double t = r.summary.median;
  if (!(t > 0)) return;
  r.gflops = r.work.flops / t * 1e-9;
  r.gbps = r.work.bytes() / t * 1e-9;
  r.intensity = r.work.bytes() > 0 ? r.work.flops / r.work.bytes() : 0;
  if (r.sustained && r.sustained->summary.median > 0) {
    r.sustained->gflops = r.work.flops / r.sustained->summary.median * 1e-9;
    r.sustained->gbps = r.work.bytes() / r.sustained->summary.median * 1e-9;
  }
}

void apply_peak(Result& r, double peak_gflops) {
  if (!(peak_gflops > 0) || !(r.gflops > 0)) return;
  r.peak_gflops = peak_gflops;
  r.pct_peak = 100.0 * r.gflops / peak_gflops;
  if (*r.pct_peak > kFasterThanPeakPct) r.add_flag("faster-than-peak");
}

void apply_roofline(Result& r, double bandwidth_gbps) {
  if (!(bandwidth_gbps > 0) || !(r.gbps > 0)) return;
  r.bandwidth_gbps = bandwidth_gbps;
  r.pct_bandwidth = 100.0 * r.gbps / bandwidth_gbps;
  if (r.peak_gflops && r.gflops > 0) {
    r.roofline_gflops = std::min(*r.peak_gflops, r.intensity * bandwidth_gbps);
    r.efficiency = r.gflops / *r.roofline_gflops;
  }
}

nlohmann::json params_json(const Case& c) {
  nlohmann::json params = nlohmann::json::object();
  for (auto& [k, v] : c.params) params[k] = v;
  return params;
}

namespace {
nlohmann::json summary_json(const Summary& s) {
  return {{"count", s.count}, {"min_s", s.min}, {"max_s", s.max}, {"mean_s", s.mean},
          {"median_s", s.median}, {"stdev_s", s.stdev}, {"q1_s", s.q1}, {"q3_s", s.q3},
          {"median_ci95_low_s", s.median_ci_low}, {"median_ci95_high_s", s.median_ci_high},
          {"rel_noise", s.rel_noise}, {"precision", s.precision}, {"outliers", s.outliers}};
}
}  // namespace

nlohmann::json sustained_json(const Sustained& s) {
  return {{"samples_s", s.samples}, {"summary", summary_json(s.summary)}, {"gflops", s.gflops}, {"gbps", s.gbps}};
}

nlohmann::json to_json(const Result& r) {
  nlohmann::json j;
  j["case"] = r.case_string;
  j["op"] = r.kase.op;
  j["impl"] = r.kase.impl;
  j["dtype"] = to_string(r.kase.dtype);
  j["params"] = params_json(r.kase);
  j["threads"] = r.kase.threads;
  j["status"] = to_string(r.status);
  j["reason"] = r.reason;
  j["flags"] = r.flags;
  j["timestamp"] = r.timestamp;
  j["cache"] = r.cache;
  j["samples_s"] = r.samples;
  j["summary"] = summary_json(r.summary);
  if (!r.stop_reason.empty()) j["stop_reason"] = r.stop_reason;
  j["batch"] = r.batch;
  j["calls"] = r.calls;
  j["warmup_calls"] = r.warmup_calls;
  j["copies"] = r.copies;
  j["measured_s"] = r.measured_s;
  j["elapsed_s"] = r.elapsed_s;
  j["work"] = {{"flops", r.work.flops}, {"bytes_read", r.work.bytes_read}, {"bytes_written", r.work.bytes_written}};
  j["gflops"] = r.gflops;
  j["gbps"] = r.gbps;
  j["intensity"] = r.intensity;
  put_optional(j, "peak_gflops", r.peak_gflops);
  put_optional(j, "pct_peak", r.pct_peak);
  put_optional(j, "bandwidth_gbps", r.bandwidth_gbps);
  put_optional(j, "roofline_gflops", r.roofline_gflops);
  put_optional(j, "roofline_efficiency", r.efficiency);
  put_optional(j, "pct_bandwidth", r.pct_bandwidth);
  put_optional(j, "max_error", r.max_error);
  put_optional(j, "tolerance", r.tolerance);
  put_optional(j, "avg_power_w", r.avg_power_w);
  put_optional(j, "energy_j", r.energy_j);
  if (!r.energy_reason.empty()) j["energy_reason"] = r.energy_reason;
  if (r.throttled_samples > 0) j["throttled_samples"] = r.throttled_samples;
  if (r.sustained) j["sustained"] = sustained_json(*r.sustained);
  if (!r.telemetry.is_null()) j["telemetry"] = r.telemetry;
  if (!r.kase.on_host()) j["device"] = r.kase.device;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["details"] = r.details;
  return j;
}

namespace {

// The journal's record and results.json's entry differ in three keys only: the case string
// ("case" / "name"), the calls ("calls" / "iterations") and the work (nested / flat).
Result read_result(const nlohmann::json& j, bool gbench) {
  try {
    Result r;
    r.case_string = j.at(gbench ? "name" : "case").get<std::string>();
    r.kase = parse_case(r.case_string);
    auto st = parse_status(j.at("status").get<std::string>());
    if (!st) throw UsageError(fmt::format("unknown status '{}'", j.at("status").get<std::string>()));
    r.status = *st;
    r.reason = j.value("reason", "");
    r.flags = j.value("flags", std::vector<std::string>{});
    r.timestamp = j.value("timestamp", "");
    r.cache = j.value("cache", "cold");
    if (auto it = j.find("samples_s"); it != j.end()) r.samples = it->get<std::vector<double>>();
    r.summary = summarize(r.samples);
    r.batch = j.value("batch", std::size_t{0});
    r.calls = j.value(gbench ? "iterations" : "calls", std::size_t{0});
    r.warmup_calls = j.value("warmup_calls", std::size_t{0});
    r.copies = j.value("copies", std::size_t{0});
    r.measured_s = j.value("measured_s", 0.0);
    r.elapsed_s = j.value("elapsed_s", 0.0);
    r.stop_reason = j.value("stop_reason", "");
    if (auto it = j.find("sustained"); it != j.end() && it->is_object()) {
      Sustained sus;
      sus.samples = it->value("samples_s", std::vector<double>{});
      sus.summary = summarize(sus.samples);
      sus.gflops = it->value("gflops", 0.0);
      sus.gbps = it->value("gbps", 0.0);
      r.sustained = std::move(sus);
    }
    if (auto it = j.find("telemetry"); it != j.end()) r.telemetry = *it;
    if (gbench) {
      r.work = {j.value("flops", 0.0), j.value("bytes_read", j.value("bytes", 0.0)), j.value("bytes_written", 0.0)};
    } else if (j.contains("work")) {
      auto& w = j["work"];
      r.work = {w.value("flops", 0.0), w.value("bytes_read", 0.0), w.value("bytes_written", 0.0)};
    }
    r.gflops = j.value("gflops", 0.0);
    r.gbps = j.value("gbps", 0.0);
    r.intensity = j.value("intensity", 0.0);
    r.peak_gflops = get_optional<double>(j, "peak_gflops");
    r.pct_peak = get_optional<double>(j, "pct_peak");
    r.bandwidth_gbps = get_optional<double>(j, "bandwidth_gbps");
    r.roofline_gflops = get_optional<double>(j, "roofline_gflops");
    r.efficiency = get_optional<double>(j, "roofline_efficiency");
    r.pct_bandwidth = get_optional<double>(j, "pct_bandwidth");
    r.max_error = get_optional<double>(j, "max_error");
    r.tolerance = get_optional<double>(j, "tolerance");
    r.avg_power_w = get_optional<double>(j, "avg_power_w");
    r.energy_j = get_optional<double>(j, "energy_j");
    r.energy_reason = j.value("energy_reason", "");
    r.throttled_samples = j.value("throttled_samples", std::size_t{0});
    r.peak_memory_bytes = j.value("peak_memory_bytes", std::size_t{0});
    r.details = j.value("details", std::map<std::string, std::string>{});
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("malformed result record: {}", e.what()));
  }
}

}  // namespace

Result result_from_json(const nlohmann::json& j) { return read_result(j, false); }

Result result_from_gbench(const nlohmann::json& e) {
  if (!e.is_object() || !e.contains("name") || !e.contains("status"))
    throw UsageError("malformed result record: a benchmark entry without opmeter's name and status");
  return read_result(e, true);
}

bool is_compute_bound(const Result& r) {
  return r.gflops > 0 && (r.gbps == 0 || r.intensity >= kComputeBoundIntensity);
}

std::optional<Rate> sustained_rate(const Result& r) {
  if (r.status != Status::ok || !r.sustained || !(r.sustained->summary.median > 0)) return std::nullopt;
  if (is_compute_bound(r)) return Rate{r.sustained->gflops, "GFLOP/s"};
  return Rate{r.sustained->gbps, "GB/s"};
}

std::optional<PerWatt> per_watt(const Result& r) {
  if (r.status != Status::ok) return std::nullopt;
  // Work per joule is work per second per watt, whatever window the energy was taken over.
  if (r.energy_j && *r.energy_j > 0) {
    if (is_compute_bound(r) && r.work.flops > 0) return PerWatt{r.work.flops / *r.energy_j / 1e9, "GFLOP/s/W"};
    if (r.work.bytes() > 0) return PerWatt{r.work.bytes() / *r.energy_j / 1e9, "GB/s/W"};
  }
  if (!r.avg_power_w || !(*r.avg_power_w > 0)) return std::nullopt;
  if (is_compute_bound(r)) return PerWatt{r.gflops / *r.avg_power_w, "GFLOP/s/W"};
  if (r.gbps > 0) return PerWatt{r.gbps / *r.avg_power_w, "GB/s/W"};
  return std::nullopt;
}

}  // namespace opmeter
