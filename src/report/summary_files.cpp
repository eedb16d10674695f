// results.json (Google Benchmark's format), results.csv (one tidy row per case), results.md.
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/fusion.hpp"
#include "opmeter/reporters.hpp"

namespace opmeter {
namespace {

// Google Benchmark picks one time unit per benchmark; we do the same by magnitude.
std::pair<const char*, double> time_unit(double s) {
  if (s < 1e-6) return {"ns", 1e9};
  if (s < 1e-3) return {"us", 1e6};
  if (s < 1) return {"ms", 1e3};
  return {"s", 1.0};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string num(double v) { return fmt::format("{:.6g}", v); }
std::string opt(const std::optional<double>& v) { return v ? num(*v) : ""; }

class SummaryFilesReporter : public Reporter {
 public:
  explicit SummaryFilesReporter(std::string dir) : dir_(std::move(dir)) {}
  void begin(const nlohmann::json& context, std::size_t) override { context_ = context; }
  void end(const std::vector<Result>& all) override {
    namespace fs = std::filesystem;
    write_atomically((fs::path(dir_) / "results.json").string(), dump_json(gbench_json(context_, all), 2) + "\n");
    write_atomically((fs::path(dir_) / "results.csv").string(), csv_table(context_, all));
    write_atomically((fs::path(dir_) / "results.md").string(), markdown_table(all));
  }

 private:
  std::string dir_;
  nlohmann::json context_;
};

}  // namespace

nlohmann::json gbench_json(const nlohmann::json& context, const std::vector<Result>& results) {
  nlohmann::json benchmarks = nlohmann::json::array();
  std::size_t family = 0;
  for (auto& r : results) {
    auto [unit, scale] = time_unit(r.summary.median);
    nlohmann::json b = {
        {"name", r.case_string},
        {"family_index", family},
        {"per_family_instance_index", 0},
        {"run_name", r.case_string},
        {"run_type", "iteration"},
        {"repetitions", 1},
        {"repetition_index", 0},
        {"threads", r.kase.threads},
        {"iterations", r.calls},
        {"real_time", r.summary.median * scale},
        {"cpu_time", r.summary.median * scale},
        {"time_unit", unit},
        {"op", r.kase.op},
        {"impl", r.kase.impl},
        {"dtype", to_string(r.kase.dtype)},
        {"params", params_json(r.kase)},
        {"status", to_string(r.status)},
        {"reason", r.reason},
        {"flags", r.flags},
        {"cache", r.cache},
        {"flops", r.work.flops},
        {"bytes", r.work.bytes()},
        {"bytes_read", r.work.bytes_read},
        {"bytes_written", r.work.bytes_written},
        {"timestamp", r.timestamp},
        {"warmup_calls", r.warmup_calls},
        {"copies", r.copies},
        {"measured_s", r.measured_s},
        {"elapsed_s", r.elapsed_s},
        {"peak_memory_bytes", r.peak_memory_bytes},
        {"gflops", r.gflops},
        {"gbps", r.gbps},
        {"intensity", r.intensity},
        {"noise", r.summary.rel_noise},
        {"samples", r.summary.count},
        {"batch", r.batch},
        {"samples_s", r.samples},
        {"median_ci95_s", {r.summary.median_ci_low, r.summary.median_ci_high}},
        {"details", r.details},
    };
    if (r.pct_peak) b["pct_peak"] = *r.pct_peak;
    if (r.peak_gflops) b["peak_gflops"] = *r.peak_gflops;
    if (r.roofline_gflops) b["roofline_gflops"] = *r.roofline_gflops;
    if (r.efficiency) b["roofline_efficiency"] = *r.efficiency;
    if (r.pct_bandwidth) b["pct_bandwidth"] = *r.pct_bandwidth;
    if (r.bandwidth_gbps) b["bandwidth_gbps"] = *r.bandwidth_gbps;
    if (r.max_error) b["max_error"] = *r.max_error;
    if (r.tolerance) b["tolerance"] = *r.tolerance;
    if (r.avg_power_w) b["avg_power_w"] = *r.avg_power_w;
    if (r.energy_j) b["energy_j"] = *r.energy_j;
    if (!r.energy_reason.empty()) b["energy_reason"] = r.energy_reason;
    if (r.throttled_samples > 0) b["throttled_samples"] = r.throttled_samples;
    b["precision"] = r.summary.precision;
    if (!r.stop_reason.empty()) b["stop_reason"] = r.stop_reason;
    if (r.sustained) b["sustained"] = sustained_json(*r.sustained);
    if (!r.telemetry.is_null()) b["telemetry"] = r.telemetry;
    if (!r.kase.on_host()) b["device"] = r.kase.device;
    if (auto w = per_watt(r)) b[w->unit == std::string("GB/s/W") ? "gbps_per_watt" : "gflops_per_watt"] = w->value;
    if (r.status != Status::ok) {
      b["error_occurred"] = true;
      b["error_message"] = fmt::format("{}: {}", to_string(r.status), r.reason);
    }
    benchmarks.push_back(b);
    if (r.status == Status::ok) {
      // Aggregates as Google Benchmark writes them for repeated runs.
      auto agg = [&](const char* name, double value, const char* agg_unit) {
        nlohmann::json a = {{"name", r.case_string + "_" + name}, {"family_index", family},
                            {"per_family_instance_index", 0}, {"run_name", r.case_string},
                            {"run_type", "aggregate"}, {"repetitions", r.summary.count},
                            {"threads", r.kase.threads}, {"aggregate_name", name},
                            {"aggregate_unit", agg_unit}, {"iterations", r.summary.count}};
        // Times in the entry's unit; the coefficient of variation is a plain ratio.
        double v = std::string(agg_unit) == "time" ? value * scale : value;
        a["real_time"] = v;
        a["cpu_time"] = v;
        a["time_unit"] = unit;
        benchmarks.push_back(a);
      };
      agg("mean", r.summary.mean, "time");
      agg("median", r.summary.median, "time");
      agg("stddev", r.summary.stdev, "time");
      agg("cv", r.summary.rel_noise, "percentage");
    }
    ++family;
  }
  nlohmann::json out = {{"context", context}, {"benchmarks", benchmarks}};
  FusionThresholds t;
  if (auto rows = fusion_rows(results, t); !rows.empty()) out["fusion"] = fusion_json(rows, t);
  return out;
}

std::string csv_table(const nlohmann::json& context, const std::vector<Result>& results) {
  std::string cpu = context.contains("cpu") ? context["cpu"].value("model", "cpu") : "cpu";
  auto device_name = [&](const Case& c) -> std::string {
    if (c.on_host()) return cpu;
    if (context.contains("gpus"))
      for (auto& g : context["gpus"])
        if (g.value("device", "") == c.device) return g.value("name", c.device);
    return c.device;
  };
  std::string out =
      "timestamp,device,op,backend,dtype,M,N,K,params,threads,cache,iters,samples,elapsed_s,min_s,mean_s,stdev_s,"
      "noise_pct,gflops,tflops,gbps,intensity,pct_peak,peak_gflops,peak_memory_mb,avg_power_w,energy_j,tflops_per_watt,"
      "gbps_per_watt,status,flags,reason,case,precision_pct,stop_reason,sustained_tflops,sustained_gbps\n";
  for (auto& r : results) {
    auto p = [&](const char* k) { return r.kase.has(k) ? r.kase.get(k) : std::string(); };
    auto w = per_watt(r);
    auto per_watt_col = [&](const char* unit, double scale) {
      return w && w->unit == std::string(unit) ? num(w->value * scale) : std::string();
    };
    std::vector<std::string> row = {
        r.timestamp, csv_field(device_name(r.kase)), r.kase.op, r.kase.impl, std::string(to_string(r.kase.dtype)), p("M"), p("N"), p("K"),
        csv_field(r.kase.params_string()), std::to_string(r.kase.threads), r.cache, std::to_string(r.calls),
        std::to_string(r.summary.count), num(r.summary.median), num(r.summary.min), num(r.summary.mean),
        num(r.summary.stdev), num(r.summary.rel_noise * 100), num(r.gflops), num(r.gflops / 1000), num(r.gbps),
        num(r.intensity), opt(r.pct_peak), opt(r.peak_gflops), num(static_cast<double>(r.peak_memory_bytes) / (1 << 20)),
        opt(r.avg_power_w), opt(r.energy_j), per_watt_col("GFLOP/s/W", 1e-3), per_watt_col("GB/s/W", 1),
        std::string(to_string(r.status)), csv_field(fmt::format("{}", fmt::join(r.flags, ";"))), csv_field(r.reason),
        csv_field(r.case_string), num(r.summary.precision * 100), r.stop_reason,
        r.sustained ? num(r.sustained->gflops / 1000) : std::string(), r.sustained ? num(r.sustained->gbps) : std::string()};
    out += fmt::format("{}\n", fmt::join(row, ","));
  }
  return out;
}

std::unique_ptr<Reporter> make_summary_files_reporter(const std::string& dir) {
  return std::make_unique<SummaryFilesReporter>(dir);
}

}  // namespace opmeter
