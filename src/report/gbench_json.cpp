// results.json: Google Benchmark's JSON layout, with opmeter's fields in each benchmark entry and
// metrics as its counters.
#include <fmt/format.h>

#include "analysis/fusion.hpp"
#include "analysis/quantization.hpp"
#include "analysis/training.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"
#include "opmeter/result_fields.hpp"

namespace opmeter {
namespace {

// Google Benchmark picks one time unit per benchmark; we do the same by magnitude.
std::pair<const char*, double> time_unit(double s) {
  if (s < 1e-6) return {"ns", 1e9};
  if (s < 1e-3) return {"us", 1e6};
  if (s < 1) return {"ms", 1e3};
  return {"s", 1.0};
}

nlohmann::json iteration_entry(const Result& r, std::size_t family) {
  auto [unit, scale] = time_unit(r.summary.median);
  nlohmann::json b = {
      {"family_index", family}, {"per_family_instance_index", 0}, {"run_name", r.case_string},
      {"run_type", "iteration"}, {"repetitions", 1},              {"repetition_index", 0},
      {"real_time", r.summary.median * scale}, {"cpu_time", r.summary.median * scale}, {"time_unit", unit},
  };
  for (auto& f : result_fields())
    if (f.outputs & kInGbench)
      if (auto v = f.value(r); !v.is_null()) b[f.key(kInGbench)] = std::move(v);
  // Metrics: plain counters as Google Benchmark's tools read them, and with their hints for opmeter.
  for (auto& [name, m] : r.metrics) {
    if (!b.contains(name)) b[name] = m.value;
    b["metrics"][name] = metric_json(m);
  }
  if (r.status != Status::ok) {
    b["error_occurred"] = true;
    b["error_message"] = fmt::format("{}: {}", to_string(r.status), r.reason);
  }
  return b;
}

ReporterRegistrar json_reporter({
    .name = "json",
    .aliases = {"gbench"},
    .summary = "results.json: every result in Google Benchmark's JSON layout, with the machine context",
    .files = {"results.json"},
    .order = 0,
    .make = [](const std::string& dir) {
      return make_end_file_reporter(dir, "results.json", [](const nlohmann::json& context, const std::vector<Result>& all) {
        return dump_json(gbench_json(context, all), 2) + "\n";
      });
    },
});

}  // namespace

nlohmann::json gbench_json(const nlohmann::json& context, const std::vector<Result>& results) {
  nlohmann::json benchmarks = nlohmann::json::array();
  std::size_t family = 0;
  for (auto& r : results) {
    benchmarks.push_back(iteration_entry(r, family));
    if (r.status == Status::ok) {
      auto [unit, scale] = time_unit(r.summary.median);
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
      // Google Benchmark's cv: stddev / mean of the same samples (not opmeter's fenced noise).
      agg("cv", r.summary.mean > 0 ? r.summary.stdev / r.summary.mean : 0.0, "percentage");
    }
    ++family;
  }
  nlohmann::json out = {{"context", context}, {"benchmarks", benchmarks}};
  FusionThresholds t;
  if (auto rows = fusion_rows(results, t); !rows.empty()) out["fusion"] = fusion_json(rows, t);
  if (auto rows = quant_rows(results); !rows.empty()) out["quantization"] = quant_json(rows);
  if (auto rows = training_rows(results); !rows.empty()) out["training"] = training_json(rows);
  return out;
}

}  // namespace opmeter
