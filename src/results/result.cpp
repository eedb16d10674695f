#include "opmeter/result.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/result_fields.hpp"

namespace opmeter {
namespace {
constexpr std::array<std::pair<Status, std::string_view>, 6> kStatusNames{{
    {Status::ok, "ok"}, {Status::skipped, "skipped"}, {Status::failed, "failed"},
    {Status::error, "error"}, {Status::crashed, "crashed"}, {Status::timeout, "timeout"},
}};
constexpr double kFasterThanPeakPct = 105.0;

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
  r.cache = c.hot ? "hot" : "cold";  // the mode it was asked for: its case string says so too
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

void withhold_rates(Result& r, const std::string& note) {
  r.work = Work{};
  r.gflops = r.gbps = r.intensity = 0;
  r.add_flag(kNoRateFlag);
  r.details[kNoRateFlag] = note;
}

std::string rate_note(const Result& r) {
  auto it = r.details.find(kNoRateFlag);
  return r.has_flag(kNoRateFlag) && it != r.details.end() ? it->second : "";
}

namespace {
// A figure above its ceiling by more than the noise margin: flagged, with the ceiling named in a
// detail of the flag's name, since either the ceiling or the figure is wrong.
void flag_above(Result& r, const char* flag, const std::string& what, double pct, const std::string& ceiling,
                const std::string& from, const std::string& why = "", double margin_pct = kFasterThanPeakPct) {
  if (!(pct > margin_pct)) return;
  r.add_flag(flag);
  r.details[flag] = fmt::format("{} is {:.1f}% of {}{}{}", what, pct, ceiling, from.empty() ? "" : ", measured by " + from,
                                why.empty() ? "" : "; " + why);
}
}  // namespace

void apply_peak(Result& r, double peak_gflops, const std::string& from, double margin_pct) {
  if (!(peak_gflops > 0) || !(r.gflops > 0)) return;
  r.peak_gflops = peak_gflops;
  r.pct_peak = 100.0 * r.gflops / peak_gflops;
  flag_above(r, "faster-than-peak", "GFLOP/s", *r.pct_peak, fmt::format("the peak {:.4g} GFLOP/s", peak_gflops), from, "",
             margin_pct);
}

void apply_roofline(Result& r, double bandwidth_gbps, const std::string& from) {
  if (!(bandwidth_gbps > 0) || !(r.gbps > 0)) return;
  r.bandwidth_gbps = bandwidth_gbps;
  r.pct_bandwidth = 100.0 * r.gbps / bandwidth_gbps;
  // The ceiling is memory bandwidth: data a hot or cache-sized case keeps in cache reads faster.
  const std::string cached = r.cache == "cold" ? "" : "its data stays in cache (" + r.cache + "), which reads faster than memory";
  const std::string memory = fmt::format("the memory bandwidth {:.4g} GB/s", bandwidth_gbps);
  flag_above(r, "faster-than-bandwidth", "GB/s", *r.pct_bandwidth, memory, from, cached);
  if (r.peak_gflops && r.gflops > 0) {
    const double by_memory = r.intensity * bandwidth_gbps;
    r.roofline_gflops = std::min(*r.peak_gflops, by_memory);
    r.efficiency = r.gflops / *r.roofline_gflops;
    const bool memory_bound = by_memory < *r.peak_gflops;
    flag_above(r, "above-roofline", "GFLOP/s", 100 * *r.efficiency,
               fmt::format("the roofline {:.4g} GFLOP/s ({})", *r.roofline_gflops,
                           memory_bound ? fmt::format("intensity {:.3g} FLOP/B x {}", r.intensity, memory)
                                        : fmt::format("the peak {:.4g} GFLOP/s", *r.peak_gflops)),
               memory_bound ? from : "", memory_bound ? cached : "");
  }
}

nlohmann::json params_json(const Case& c) {
  nlohmann::json params = nlohmann::json::object();
  for (auto& [k, v] : c.params) params[k] = v;
  return params;
}

nlohmann::json to_json(const Result& r) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& f : result_fields())
    if (f.outputs & kInJournal)
      if (auto v = f.value(r); !v.is_null()) j[f.name] = std::move(v);
  for (auto& [name, m] : r.metrics) j["metrics"][name] = metric_json(m);
  return j;
}

namespace {

// The journal's record and results.json's entry differ in a few keys only (the field table's
// gbench names): the case string ("case" / "name"), the calls ("calls" / "iterations") and the
// work (nested / flat).
Result read_result(const nlohmann::json& j, bool gbench) {
  const FieldOutput output = gbench ? kInGbench : kInJournal;
  try {
    Result r;
    r.kase = parse_case(j.at(gbench ? "name" : "case").get<std::string>());
    r.case_string = r.kase.to_string();  // in the op's parameter order, as planned cases are (older files may differ)
    auto st = parse_status(j.at("status").get<std::string>());
    if (!st) throw UsageError(fmt::format("unknown status '{}'", j.at("status").get<std::string>()));
    r.status = *st;
    for (auto& f : result_fields())
      if ((f.outputs & output) && f.read)
        if (auto it = j.find(f.key(output)); it != j.end() && !it->is_null()) f.read(r, *it);
    // Times a measurement can take: a sample of 0, -1, NaN or 1e308 s is a damaged file, not a
    // regression for compare to report. (None is fine: a check's result is untimed.)
    constexpr double kLongestSample = 1e7;  // s: about 4 months
    auto check_times = [&](const std::vector<double>& samples, const char* name) {
      for (double s : samples)
        if (!(s > 0 && s <= kLongestSample))
          throw UsageError(
              fmt::format("malformed result record: {} holds {}, not a time in (0, {:g}] s", name, s, kLongestSample));
    };
    check_times(r.samples, "samples_s");
    if (r.sustained) check_times(r.sustained->samples, "sustained.samples_s");  // compare --sustained reads them
    r.summary = summarize(r.samples);
    if (auto it = j.find("metrics"); it != j.end() && it->is_object())
      for (auto& [name, m] : it->items()) {
        if (!is_valid_metric_name(name)) throw UsageError(fmt::format("malformed result record: metric name '{}'", name));
        r.metrics[name] = metric_from_json(m);
      }
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
  if (!(r.sustained->gbps > 0)) return std::nullopt;  // no work to rate (withhold_rates)
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
