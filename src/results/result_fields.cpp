// The table of result fields, and the metrics that have no field of their own.
#include "opmeter/result_fields.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"
#include "util/human_units.hpp"

namespace opmeter {
namespace {
// A rate's cell: three significant digits below 10 (a slow depthwise conv's 0.0078 GFLOP/s is
// no "0.0"), one decimal above.
std::string rate_cell(double v) { return v < 10 ? fmt::format("{:.3g}", v) : fmt::format("{:.1f}", v); }

using nlohmann::json;

// CSV cells of what a case did not measure are empty, not 0: a rate it has none of (a bandwidth
// kernel's GFLOP/s), the times of a case that took no sample.
using CsvValue = std::function<json(const Result&, const json&)>;
CsvValue csv_rate(double Result::*rate, double scale = 1) {
  return [rate, scale](const Result& r, const json&) { return r.*rate > 0 ? json(r.*rate * scale) : json(); };
}
CsvValue csv_time(double Summary::*time) {
  return [time](const Result& r, const json&) { return r.summary.count > 0 ? json(r.summary.*time) : json(); };
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(); }
// A figure that may be unknown (NaN: the median's interval of fewer than 6 samples): null.
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(); }
json text_if(const std::string& s) { return s.empty() ? json() : json(s); }

// Readers for the common member types.
auto read_text(std::string Result::*m) {
  return [m](Result& r, const json& v) { r.*m = v.get<std::string>(); };
}
auto read_double(double Result::*m) {
  return [m](Result& r, const json& v) { r.*m = v.get<double>(); };
}
auto read_count(std::size_t Result::*m) {
  return [m](Result& r, const json& v) { r.*m = v.get<std::size_t>(); };
}
auto read_optional(std::optional<double> Result::*m) {
  return [m](Result& r, const json& v) { r.*m = v.get<double>(); };
}

// A spread is unknown from one sample, or none (a skipped or failed case): null, not a perfect 0
// or an infinity; CSV cells of what a case did not measure are empty.
json spread_json(const Summary& s, double fraction) {
  return s.count >= 2 && std::isfinite(fraction) ? json(fraction) : json(nullptr);
}
json spread_pct_json(const Summary& s, double fraction) {
  return s.count >= 2 && std::isfinite(fraction) ? json(fraction * 100) : json(nullptr);
}

json summary_json(const Summary& s) {
  return {{"count", s.count},
          {"min_s", s.min},
          {"max_s", s.max},
          {"mean_s", s.mean},
          {"median_s", s.median},
          {"stdev_s", s.stdev},
          {"q1_s", s.q1},
          {"q3_s", s.q3},
          {"median_ci95_low_s", finite_or_null(s.median_ci_low)},
          {"median_ci95_high_s", finite_or_null(s.median_ci_high)},
          {"rel_noise", spread_json(s, s.rel_noise)},
          {"precision", spread_json(s, s.precision)},
          {"outliers", s.outliers}};
}

std::optional<PerWatt> per_watt_in(const Result& r, const char* unit) {
  auto w = per_watt(r);
  return w && w->unit == std::string(unit) ? w : std::nullopt;
}

std::string status_cell(const Result& r) {
  std::string s(to_string(r.status));
  for (auto& f : r.flags) s += ", " + f;
  if (auto note = rate_note(r); !note.empty()) s += " (" + note + ")";  // why GB/s is "-"
  if (r.status != Status::ok && !r.reason.empty()) {
    auto reason = r.reason.size() > 90 ? r.reason.substr(0, 87) + "..." : r.reason;
    s += ": " + reason;
  }
  return s;
}

bool ok(const Result& r) { return r.status == Status::ok; }

std::vector<ResultField> make_fields() {
  const unsigned all = kInJournal | kInGbench | kInCsv, json_only = kInJournal | kInGbench;
  auto param = [](const char* key) {
    return [key](const Result& r) { return json(r.kase.has(key) ? r.kase.get(key) : std::string()); };
  };
  std::vector<ResultField> f;
  // --- results.csv's columns, in order -------------------------------------------------------
  f.push_back({.name = "timestamp", .outputs = all, .value = [](const Result& r) { return json(r.timestamp); },
               .read = read_text(&Result::timestamp)});
  f.push_back({.name = "device", .outputs = all,
               .value = [](const Result& r) { return !r.kase.on_host() ? json(r.kase.device) : json(); },
               .csv_value = [](const Result& r, const json& context) -> json {
                 // The CSV names the device itself: the CPU's or the GPU's model.
                 if (r.kase.on_host()) return context.contains("cpu") ? context["cpu"].value("model", "cpu") : "cpu";
                 if (context.contains("gpus"))
                   for (auto& g : context["gpus"])
                     if (g.value("device", "") == r.kase.device) return g.value("name", r.kase.device);
                 return r.kase.device;
               }});
  f.push_back({.name = "op", .outputs = all, .value = [](const Result& r) { return json(r.kase.op); },
               .markdown = "case", .cell = [](const Result& r) { return r.kase.op; }});
  f.push_back({.name = "impl", .outputs = all, .csv_name = "backend",
               .value = [](const Result& r) { return json(r.kase.impl); },
               .markdown = "impl", .cell = [](const Result& r) { return r.kase.impl; }});
  f.push_back({.name = "dtype", .outputs = all, .value = [](const Result& r) { return json(to_string(r.kase.dtype)); },
               .markdown = "dtype", .cell = [](const Result& r) { return std::string(to_string(r.kase.dtype)); }});
  f.push_back({.name = "M", .outputs = kInCsv, .value = param("M")});
  f.push_back({.name = "N", .outputs = kInCsv, .value = param("N")});
  f.push_back({.name = "K", .outputs = kInCsv, .value = param("K")});
  f.push_back({.name = "params", .outputs = all, .value = [](const Result& r) { return params_json(r.kase); },
               .csv_value = [](const Result& r, const json&) { return json(r.kase.params_string()); },
               .markdown = "shape", .cell = [](const Result& r) { return r.kase.params_string(); }});
  f.push_back({.name = "threads", .outputs = all, .value = [](const Result& r) { return json(r.kase.threads); }});
  f.push_back({.name = "cache", .outputs = all, .value = [](const Result& r) { return json(r.cache); },
               .read = read_text(&Result::cache)});
  f.push_back({.name = "calls", .outputs = all, .gbench_name = "iterations", .csv_name = "iters",
               .value = [](const Result& r) { return json(r.calls); }, .read = read_count(&Result::calls)});
  f.push_back({.name = "samples", .outputs = kInGbench | kInCsv,
               .value = [](const Result& r) { return json(r.summary.count); }});
  f.push_back({.name = "median_s", .outputs = kInCsv, .csv_name = "elapsed_s", .unit = "s", .better = Better::lower,
               .value = [](const Result& r) { return json(r.summary.median); }, .csv_value = csv_time(&Summary::median),
               .markdown = "median", .cell = [](const Result& r) { return ok(r) ? human_time(r.summary.median) : "-"; },
               .numeric = true});
  f.push_back({.name = "min_s", .outputs = kInCsv, .unit = "s", .better = Better::lower,
               .value = [](const Result& r) { return json(r.summary.min); }, .csv_value = csv_time(&Summary::min)});
  f.push_back({.name = "mean_s", .outputs = kInCsv, .unit = "s", .better = Better::lower,
               .value = [](const Result& r) { return json(r.summary.mean); }, .csv_value = csv_time(&Summary::mean)});
  f.push_back({.name = "stdev_s", .outputs = kInCsv, .unit = "s", .better = Better::lower,
               .value = [](const Result& r) { return json(r.summary.stdev); }, .csv_value = csv_time(&Summary::stdev)});
  f.push_back({.name = "noise_pct", .outputs = kInCsv, .unit = "%", .better = Better::lower,
               .value = [](const Result& r) { return spread_pct_json(r.summary, r.summary.rel_noise); }});
  f.push_back({.name = "gflops", .outputs = all, .unit = "GFLOP/s", .better = Better::higher,
               .value = [](const Result& r) { return json(r.gflops); }, .csv_value = csv_rate(&Result::gflops),
               .read = read_double(&Result::gflops), .markdown = "GFLOP/s",
               .cell = [](const Result& r) { return ok(r) && r.gflops > 0 ? rate_cell(r.gflops) : "-"; },
               .numeric = true});
  f.push_back({.name = "tflops", .outputs = kInCsv, .unit = "TFLOP/s", .better = Better::higher,
               .value = [](const Result& r) { return json(r.gflops / 1000); }, .csv_value = csv_rate(&Result::gflops, 1e-3)});
  f.push_back({.name = "gbps", .outputs = all, .unit = "GB/s", .better = Better::higher,
               .value = [](const Result& r) { return json(r.gbps); }, .csv_value = csv_rate(&Result::gbps),
               .read = read_double(&Result::gbps), .markdown = "GB/s",
               .cell = [](const Result& r) { return ok(r) && r.gbps > 0 ? rate_cell(r.gbps) : "-"; },
               .numeric = true});
  f.push_back({.name = "intensity",
               .outputs = all,
               .unit = "FLOP/B",
               .value = [](const Result& r) { return ok(r) ? json(r.intensity) : json(); },  // not derived otherwise
               .read = read_double(&Result::intensity)});
  f.push_back({.name = "pct_peak", .outputs = all, .unit = "%", .better = Better::higher,
               .value = [](const Result& r) { return opt(r.pct_peak); }, .read = read_optional(&Result::pct_peak),
               .markdown = "% of peak",
               .cell = [](const Result& r) { return r.pct_peak ? rate_cell(*r.pct_peak) + "%" : "-"; },
               .numeric = true});
  // The ceiling of memory-bound ops (activations, norms, GEMV): % of peak FLOP/s says little there.
  f.push_back({.name = "pct_bandwidth",
               .outputs = all,
               .unit = "%",
               .better = Better::higher,
               .value = [](const Result& r) { return opt(r.pct_bandwidth); },
               .read = read_optional(&Result::pct_bandwidth),
               .markdown = "% of BW",
               .cell = [](const Result& r) { return r.pct_bandwidth ? rate_cell(*r.pct_bandwidth) + "%" : "-"; },
               .numeric = true});
  f.push_back({.name = "peak_gflops", .outputs = all, .unit = "GFLOP/s",
               .value = [](const Result& r) { return opt(r.peak_gflops); }, .read = read_optional(&Result::peak_gflops)});
  f.push_back({.name = "peak_memory_mib",
               .outputs = kInCsv,
               .unit = "MiB",
               .value =
                   [](const Result& r) {
                     return r.peak_memory_bytes ? json(static_cast<double>(*r.peak_memory_bytes) / (1 << 20)) : json();
                   },
               .markdown = "peak mem",
               // A cold case holds many input sets to rotate through: most of its peak is theirs.
               .cell =
                   [](const Result& r) {
                     if (!r.peak_memory_bytes) return std::string("-");
                     const auto bytes = human_bytes(double(*r.peak_memory_bytes));
                     return r.copies > 1 ? fmt::format("{} in {} sets", bytes, r.copies) : bytes;
                   },
               .numeric = true});
  f.push_back({.name = "avg_power_w", .outputs = all, .unit = "W",
               .value = [](const Result& r) { return opt(r.avg_power_w); }, .read = read_optional(&Result::avg_power_w)});
  f.push_back({.name = "energy_j", .outputs = all, .unit = "J", .better = Better::lower,
               .value = [](const Result& r) { return opt(r.energy_j); }, .read = read_optional(&Result::energy_j)});
  f.push_back({.name = "tflops_per_watt", .outputs = kInCsv, .unit = "TFLOP/s/W", .better = Better::higher,
               .value = [](const Result& r) {
                 auto w = per_watt_in(r, "GFLOP/s/W");
                 return w ? json(w->value * 1e-3) : json();
               }});
  f.push_back({.name = "gbps_per_watt", .outputs = kInGbench | kInCsv, .unit = "GB/s/W", .better = Better::higher,
               .value = [](const Result& r) {
                 auto w = per_watt_in(r, "GB/s/W");
                 return w ? json(w->value) : json();
               }});
  f.push_back({.name = "status", .outputs = all, .value = [](const Result& r) { return json(to_string(r.status)); },
               .markdown = "status", .cell = status_cell});
  f.push_back({.name = "flags", .outputs = all, .value = [](const Result& r) { return json(r.flags); },
               .read = [](Result& r, const json& v) { r.flags = v.get<std::vector<std::string>>(); }});
  f.push_back({.name = "reason", .outputs = all, .value = [](const Result& r) { return json(r.reason); },
               .read = read_text(&Result::reason)});
  f.push_back({.name = "case", .outputs = all, .gbench_name = "name",
               .value = [](const Result& r) { return json(r.case_string); }});
  f.push_back({.name = "precision_pct", .outputs = kInCsv, .unit = "%", .better = Better::lower,
               .value = [](const Result& r) { return spread_pct_json(r.summary, r.summary.precision); }});
  f.push_back({.name = "stop_reason", .outputs = all, .value = [](const Result& r) { return text_if(r.stop_reason); },
               .read = read_text(&Result::stop_reason)});
  f.push_back({.name = "sustained_tflops", .outputs = kInCsv, .unit = "TFLOP/s", .better = Better::higher,
               .value = [](const Result& r) { return r.sustained ? json(r.sustained->gflops / 1000) : json(); }});
  f.push_back({.name = "sustained_gbps", .outputs = kInCsv, .unit = "GB/s", .better = Better::higher,
               .value = [](const Result& r) { return r.sustained ? json(r.sustained->gbps) : json(); }});
  f.push_back({.name = "label",
               .outputs = all,
               .value = [](const Result& r) { return text_if(r.kase.label); },
               .read = [](Result& r, const json& v) { r.kase.label = v.get<std::string>(); },
               .markdown = "label",
               .cell = [](const Result& r) { return r.kase.label; },
               .markdown_if_any = true});
  // A merged set's results each name the run (machine) that measured them.
  f.push_back({.name = kMachineDetail, .outputs = kInCsv,
               .value = [](const Result& r) {
                 auto on = r.details.find(kMachineDetail);
                 return on == r.details.end() ? json() : json(on->second);
               },
               .markdown = "machine", .cell = [](const Result& r) {
                 auto on = r.details.find(kMachineDetail);
                 return on == r.details.end() ? std::string("-") : on->second;
               },
               .markdown_if_any = true, .csv_if_any = true});
  // --- JSON only ------------------------------------------------------------------------------
  f.push_back({.name = "summary", .outputs = kInJournal, .value = [](const Result& r) { return summary_json(r.summary); }});
  f.push_back({.name = "samples_s", .outputs = json_only, .unit = "s",
               .value = [](const Result& r) { return json(r.samples); },
               .read = [](Result& r, const json& v) { r.samples = v.get<std::vector<double>>(); }});
  f.push_back({.name = "batch", .outputs = json_only, .value = [](const Result& r) { return json(r.batch); },
               .read = read_count(&Result::batch)});
  f.push_back({.name = "warmup_calls", .outputs = json_only, .value = [](const Result& r) { return json(r.warmup_calls); },
               .read = read_count(&Result::warmup_calls)});
  f.push_back({.name = "copies", .outputs = json_only, .value = [](const Result& r) { return json(r.copies); },
               .read = read_count(&Result::copies)});
  f.push_back({.name = "measured_s", .outputs = json_only, .unit = "s",
               .value = [](const Result& r) { return json(r.measured_s); }, .read = read_double(&Result::measured_s)});
  f.push_back({.name = "elapsed_s", .outputs = json_only, .unit = "s",
               .value = [](const Result& r) { return json(r.elapsed_s); }, .read = read_double(&Result::elapsed_s)});
  // The work: one object in the journal, flat keys in results.json. `bytes` is read first so that
  // `bytes_read`, where a file has it, wins.
  f.push_back({.name = "work", .outputs = kInJournal,
               .value = [](const Result& r) {
                 return json{{"flops", r.work.flops}, {"bytes_read", r.work.bytes_read},
                             {"bytes_written", r.work.bytes_written}};
               },
               .read = [](Result& r, const json& w) {
                 r.work = {w.value("flops", 0.0), w.value("bytes_read", 0.0), w.value("bytes_written", 0.0)};
               }});
  f.push_back({.name = "flops", .outputs = kInGbench, .unit = "FLOP", .value = [](const Result& r) { return json(r.work.flops); },
               .read = [](Result& r, const json& v) { r.work.flops = v.get<double>(); }});
  f.push_back({.name = "bytes", .outputs = kInGbench, .unit = "B", .value = [](const Result& r) { return json(r.work.bytes()); },
               .read = [](Result& r, const json& v) { r.work.bytes_read = v.get<double>(); }});
  f.push_back({.name = "bytes_read", .outputs = kInGbench, .unit = "B",
               .value = [](const Result& r) { return json(r.work.bytes_read); },
               .read = [](Result& r, const json& v) { r.work.bytes_read = v.get<double>(); }});
  f.push_back({.name = "bytes_written", .outputs = kInGbench, .unit = "B",
               .value = [](const Result& r) { return json(r.work.bytes_written); },
               .read = [](Result& r, const json& v) { r.work.bytes_written = v.get<double>(); }});
  f.push_back({.name = "noise", .outputs = kInGbench, .better = Better::lower,
               .value = [](const Result& r) { return spread_json(r.summary, r.summary.rel_noise); },
               .markdown = "noise",
               .cell = [](const Result& r) { return ok(r) ? spread_percent(r.summary.rel_noise, r.summary.count) : "-"; },
               .numeric = true});
  f.push_back({.name = "median_ci95_s", .outputs = kInGbench, .unit = "s", .value = [](const Result& r) {
                 return json{finite_or_null(r.summary.median_ci_low), finite_or_null(r.summary.median_ci_high)};
               }});
  f.push_back({.name = "precision", .outputs = kInGbench, .better = Better::lower,
               .value = [](const Result& r) { return spread_json(r.summary, r.summary.precision); },
               .markdown = "±",
               .cell = [](const Result& r) { return ok(r) ? spread_percent(r.summary.precision, r.summary.count) : "-"; },
               .numeric = true});
  f.push_back({.name = "gflops_per_watt", .outputs = kInGbench, .unit = "GFLOP/s/W", .better = Better::higher,
               .value = [](const Result& r) {
                 auto w = per_watt_in(r, "GFLOP/s/W");
                 return w ? json(w->value) : json();
               }});
  f.push_back({.name = "bandwidth_gbps", .outputs = json_only, .unit = "GB/s",
               .value = [](const Result& r) { return opt(r.bandwidth_gbps); },
               .read = read_optional(&Result::bandwidth_gbps)});
  f.push_back({.name = "roofline_gflops", .outputs = json_only, .unit = "GFLOP/s",
               .value = [](const Result& r) { return opt(r.roofline_gflops); },
               .read = read_optional(&Result::roofline_gflops)});
  f.push_back({.name = "roofline_efficiency",
               .outputs = json_only,
               .better = Better::higher,
               .value = [](const Result& r) { return opt(r.efficiency); },
               .read = read_optional(&Result::efficiency)});
  f.push_back({.name = "max_error", .outputs = json_only, .better = Better::lower,
               .value = [](const Result& r) { return opt(r.max_error); }, .read = read_optional(&Result::max_error)});
  f.push_back({.name = "tolerance", .outputs = json_only,
               .value = [](const Result& r) { return opt(r.tolerance); }, .read = read_optional(&Result::tolerance)});
  f.push_back({.name = "energy_reason", .outputs = json_only,
               .value = [](const Result& r) { return text_if(r.energy_reason); },
               .read = read_text(&Result::energy_reason)});
  f.push_back({.name = "throttled_samples", .outputs = json_only,
               .value = [](const Result& r) { return r.throttled_samples > 0 ? json(r.throttled_samples) : json(); },
               .read = read_count(&Result::throttled_samples)});
  f.push_back({.name = "sustained", .outputs = json_only,
               .value = [](const Result& r) { return r.sustained ? sustained_json(*r.sustained) : json(); },
               .read = [](Result& r, const json& v) {
                 if (!v.is_object()) return;
                 Sustained sus;
                 sus.samples = v.value("samples_s", std::vector<double>{});
                 sus.summary = summarize(sus.samples);
                 sus.gflops = v.value("gflops", 0.0);
                 sus.gbps = v.value("gbps", 0.0);
                 r.sustained = std::move(sus);
               },
               .markdown = "sustained",
               .cell = [](const Result& r) {
                 auto s = sustained_rate(r);
                 return s ? fmt::format("{:.1f} {}", s->value, s->unit) : "-";
               },
               .numeric = true});
  f.push_back({.name = "telemetry", .outputs = json_only, .value = [](const Result& r) { return r.telemetry; },
               .read = [](Result& r, const json& v) { r.telemetry = v; }});
  f.push_back({.name = "peak_memory_bytes", .outputs = json_only, .unit = "B",
               .value = [](const Result& r) { return r.peak_memory_bytes ? json(*r.peak_memory_bytes) : json(); },
               .read = [](Result& r, const json& v) { r.peak_memory_bytes = v.get<std::size_t>(); }});
  f.push_back({.name = "details", .outputs = json_only, .value = [](const Result& r) { return json(r.details); },
               .read = [](Result& r, const json& v) { r.details = v.get<std::map<std::string, std::string>>(); }});
  return f;
}

// Keys of a Google Benchmark entry that are its own, not a field's.
const std::set<std::string> kGbenchKeys = {"family_index", "per_family_instance_index", "run_name", "run_type",
                                           "repetitions", "repetition_index", "real_time", "cpu_time", "time_unit",
                                           "aggregate_name", "aggregate_unit", "error_occurred", "error_message",
                                           "metrics"};

constexpr std::pair<Better, const char*> kBetterNames[] = {
    {Better::higher, "higher"}, {Better::lower, "lower"}, {Better::neither, "neither"}};
constexpr std::pair<MetricFormat, const char*> kFormatNames[] = {
    {MetricFormat::number, "number"},     {MetricFormat::integer, "integer"}, {MetricFormat::percent, "percent"},
    {MetricFormat::duration, "duration"}, {MetricFormat::bytes, "bytes"}};

template <class E, std::size_t N>
const char* name_of(const std::pair<E, const char*> (&names)[N], E e) {
  for (auto& [v, n] : names)
    if (v == e) return n;
  return names[0].second;
}
template <class E, std::size_t N>
E parse_name(const std::pair<E, const char*> (&names)[N], const std::string& s, const char* what) {
  for (auto& [v, n] : names)
    if (s == n) return v;
  throw UsageError(fmt::format("unknown metric {} '{}'", what, s));
}

}  // namespace

const std::string& ResultField::key(FieldOutput output) const {
  if (output == kInGbench && !gbench_name.empty()) return gbench_name;
  if (output == kInCsv && !csv_name.empty()) return csv_name;
  return name;
}

const std::vector<ResultField>& result_fields() {
  static const std::vector<ResultField> fields = make_fields();
  return fields;
}

const ResultField& result_field(const std::string& name) {
  for (auto& f : result_fields())
    if (f.name == name) return f;
  throw std::out_of_range("no result field " + name);
}

const std::vector<std::string>& markdown_columns() {
  static const std::vector<std::string> columns = {
      "op",     "label", "impl",     "dtype",         "params", "machine",   "median_s",        "precision",
      "gflops", "gbps",  "pct_peak", "pct_bandwidth", "noise",  "sustained", "peak_memory_mib", "status"};
  return columns;
}

nlohmann::json sustained_json(const Sustained& s) {
  return {{"samples_s", s.samples}, {"summary", summary_json(s.summary)}, {"gflops", s.gflops}, {"gbps", s.gbps}};
}

bool is_valid_metric_name(const std::string& name) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
                          std::string::npos)
    return false;
  if (kGbenchKeys.count(name)) return false;
  for (auto& f : result_fields())
    if (f.name == name || f.key(kInGbench) == name || f.key(kInCsv) == name) return false;
  return true;
}

nlohmann::json metric_json(const Metric& m) {
  return {{"value", m.value}, {"unit", m.unit}, {"better", name_of(kBetterNames, m.better)},
          {"format", name_of(kFormatNames, m.format)}};
}

Metric metric_from_json(const nlohmann::json& j) {
  Metric m;
  m.value = j.at("value").get<double>();
  m.unit = j.value("unit", "");
  m.better = parse_name(kBetterNames, j.value("better", "neither"), "hint better");
  m.format = parse_name(kFormatNames, j.value("format", "number"), "format");
  return m;
}

std::string format_metric(const Metric& m) {
  switch (m.format) {
    case MetricFormat::integer: return fmt::format("{:.0f}", m.value);
    case MetricFormat::percent: return fmt::format("{:.1f}%", m.value);
    case MetricFormat::duration: return human_time(m.value);
    case MetricFormat::bytes: return human_bytes(m.value);
    case MetricFormat::number: break;
  }
  return fmt::format("{:.4g}", m.value);
}

std::string metric_header(const std::string& name, const Metric& m) {
  bool unit_in_cell = m.format == MetricFormat::percent || m.format == MetricFormat::duration ||
                      m.format == MetricFormat::bytes;
  return m.unit.empty() || unit_in_cell ? name : fmt::format("{} ({})", name, m.unit);
}

std::vector<std::string> metric_names(const std::vector<Result>& results) {
  std::set<std::string> names;
  for (auto& r : results)
    for (auto& [name, m] : r.metrics) names.insert(name);
  return {names.begin(), names.end()};
}

void Result::set_metric(const std::string& name, Metric m) {
  if (!is_valid_metric_name(name))
    throw std::invalid_argument(fmt::format("'{}' cannot name a metric: letters, digits, '_', '.', '-', and no "
                                            "name a result field or Google Benchmark already uses",
                                            name));
  metrics[name] = std::move(m);
}

}  // namespace opmeter
