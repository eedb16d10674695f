// The pipeline files of a results directory: writing them, and reading pipelines.json back.
#include "pipeline/present/pipeline_outputs.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"
#include "util/file_safe_name.hpp"
#include "util/output_file.hpp"
#include "util/text.hpp"

namespace opmeter::pipeline {
namespace {
namespace fs = std::filesystem;

// Whole numbers (params, MACs, counts) in full, the rest to 6 significant digits.
std::string num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.6g}", v);
}
std::string num(const std::optional<double>& v, double scale = 1) { return v ? num(*v * scale) : ""; }

std::string row(const std::vector<std::string>& cells) { return fmt::format("{}\n", fmt::join(cells, ",")); }

// A merged set's pipelines name their machine in a last column; a run's files keep their columns.
bool any_machine(const std::vector<PipelineSummary>& summaries) {
  return std::any_of(summaries.begin(), summaries.end(), [](const PipelineSummary& s) { return !s.machine.empty(); });
}
std::vector<std::string> with_machine(std::vector<std::string> cells, bool machines, const std::string& machine) {
  if (machines) cells.push_back(csv_field(machine));
  return cells;
}

}  // namespace

std::string summary_csv(const std::vector<PipelineSummary>& summaries) {
  const bool machines = any_machine(summaries);
  std::string out = row(with_machine({"name", "params", "macs", "batch", "dtype", "device", "complete", "latency_ms",
                                      "throughput", "unit", "energy_j", "dynamic_energy_j", "energy_per_sample_j",
                                      "pipeline_parallel_energy_j", "period_ms", "idle_power_w", "end_to_end_ms", "ratio",
                                      "pipeline_params"},
                                     machines, "machine"));
  for (auto& s : summaries)
    out += row(with_machine({csv_field(s.name), num(s.total_params), num(s.total_macs), csv_field(s.param("batch")),
                             csv_field(s.dtype), csv_field(s.device), s.complete ? "true" : "false",
                             num(s.latency_s, 1e3), num(s.throughput), csv_field(s.sample_unit + "/s"), num(s.energy_j),
                             num(s.dynamic_energy_j), num(s.energy_per_sample_j), num(s.pipeline_parallel_energy_j),
                             num(s.period_s, 1e3), num(s.idle_power_w), num(s.end_to_end_s, 1e3),
                             num(s.end_to_end_ratio), csv_field(params_text(s))},
                            machines, s.machine));
  return out;
}

std::string layers_csv(const std::vector<PipelineSummary>& summaries) {
  const bool machines = any_machine(summaries);
  std::string out = row(with_machine({"pipeline", "device", "index", "label", "op", "impl", "count", "status", "reason",
                                      "latency_ms", "total_ms", "power_w", "energy_j", "total_energy_j", "idle_energy_j",
                                      "dynamic_energy_j", "params", "macs", "flops", "bytes", "pct_roofline", "pct_peak",
                                      "flags", "energy_reason", "case", "dtype", "pipeline_params"},
                                     machines, "machine"));
  for (auto& s : summaries)
    for (std::size_t i = 0; i < s.layers.size(); ++i) {
      auto& l = s.layers[i];
      out += row(with_machine(
          {csv_field(s.name), csv_field(s.device), std::to_string(i), csv_field(l.label), csv_field(l.op),
           csv_field(l.impl), std::to_string(l.count), csv_field(l.status), csv_field(l.reason), num(l.latency_s, 1e3),
           num(l.total_s, 1e3), num(l.power_w), num(l.energy_j), num(l.total_energy_j), num(l.idle_energy_j),
           num(l.dynamic_energy_j), num(l.params), num(l.macs), num(l.flops), num(l.bytes), num(l.pct_roofline),
           num(l.pct_peak), csv_field(fmt::format("{}", fmt::join(l.flags, ";"))), csv_field(l.energy_reason),
           csv_field(l.case_string), csv_field(s.dtype), csv_field(params_text(s))},
          machines, s.machine));
    }
  return out;
}

std::vector<std::string> log_file_names(const std::vector<PipelineSummary>& summaries) {
  std::map<std::string, int> uses;
  for (auto& s : summaries) ++uses[s.name];
  std::vector<std::string> names;
  std::map<std::string, int> taken;
  for (auto& s : summaries) {
    // Appended piecewise: "literal" + std::string trips GCC 12's false -Wrestrict.
    std::string base = "pipeline-";
    base.append(file_safe_name(s.name));
    if (uses[s.name] > 1) base.append("-").append(file_safe_name(s.device));
    if (uses[s.name] > 1 && !s.machine.empty()) base.append("-").append(file_safe_name(s.machine));
    // Still the same (same name on the same device, or names that differ only in odd characters).
    int n = taken[base]++;
    names.push_back(base + (n ? fmt::format("-{}", n + 1) : "") + ".log");
  }
  return names;
}

std::vector<std::string> write_pipeline_outputs(const std::string& dir, const std::vector<PipelineSummary>& summaries) {
  auto path = [&](const std::string& name) { return (fs::path(dir) / name).string(); };
  std::vector<std::string> written = {kPipelinesFile, "summary.csv", "pipeline_layers.csv"};
  write_atomically(path(kPipelinesFile), dump_json(pipelines_json(summaries), 2) + "\n");
  write_atomically(path("summary.csv"), summary_csv(summaries));
  write_atomically(path("pipeline_layers.csv"), layers_csv(summaries));
  auto logs = log_file_names(summaries);
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    write_atomically(path(logs[i]), pipeline_log(summaries[i]));
    written.push_back(logs[i]);
  }
  return written;
}

std::vector<PipelineSummary> read_pipelines(const std::string& dir) {
  auto file = fs::path(dir) / kPipelinesFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return {};
  std::ifstream in(file);
  if (!in) throw UsageError(fmt::format("{}: cannot be read", file.string()));
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw UsageError(fmt::format("{}: not JSON (cut short?)", file.string()));
  bool ours = j.is_object() && j.contains("schema") && j["schema"].is_string() && j["schema"] == kPipelinesSchema;
  if (!ours)
    throw UsageError(fmt::format("{}: not opmeter pipelines (expected \"schema\": \"{}\")", file.string(), kPipelinesSchema));
  if (!j.contains("pipelines") || !j["pipelines"].is_array())
    throw UsageError(fmt::format("{}: 'pipelines' should be a list", file.string()));
  std::vector<PipelineSummary> out;
  try {
    for (auto& p : j["pipelines"]) {
      out.push_back(summary_from_json(p));
      out.back().source = dir;
    }
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", file.string(), e.what()));
  }
  return out;
}

}  // namespace opmeter::pipeline
