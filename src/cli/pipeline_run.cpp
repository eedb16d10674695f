// `opmeter run` with pipelines: the layer cases run like any others, then skipped layers move to
// their next impl in another round (same results directory), and each pipeline is summed up.
#include <chrono>
#include <iostream>
#include <optional>
#include <set>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "opmeter/config.hpp"
#include "opmeter/errors.hpp"
#include "pipeline/pipeline_outputs.hpp"
#include "pipeline/pipeline_summary.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"
#include "results/run_dir.hpp"

namespace opmeter {
namespace {

// Rounds of fallback at most: a layer has at most this many impls to try after its first.
constexpr int kMaxRounds = 8;

// The idle power of where a pipeline ran, from the run's machine context (GPU: NVML; CPU: RAPL).
std::optional<double> idle_power(const nlohmann::json& context, const Case& like) {
  if (like.on_host()) {
    for (const auto& at : {context.value("/cpu_idle_power_w"_json_pointer, nlohmann::json()),
                           context.value("/cpu/idle_power_w"_json_pointer, nlohmann::json())})
      if (at.is_number()) return at.get<double>();
    return std::nullopt;
  }
  if (!context.contains("gpus")) return std::nullopt;
  for (const auto& g : context["gpus"])
    if (g.value("device", "") == like.device && g.contains("idle_power_w") && g["idle_power_w"].is_number())
      return g["idle_power_w"].get<double>();
  return std::nullopt;
}

nlohmann::json read_context(const std::string& dir) {
  try {
    auto stored = load_results(dir);
    return stored.context;
  } catch (const std::exception&) {
    return nlohmann::json::object();
  }
}

// The reason every layer case tried so far was skipped for, when they all were, for one reason,
// by impls of several kinds: the backend's (no CUDA device), which no next impl escapes.
std::optional<std::string> backend_skip_reason(const std::set<std::string>& layer_cases, const std::vector<Result>& results) {
  std::set<std::string> reasons, impls;
  for (const auto& r : results) {
    if (!layer_cases.count(r.case_string)) continue;
    if (r.status != Status::skipped) return std::nullopt;
    reasons.insert(r.reason);
    impls.insert(r.kase.impl);
  }
  if (reasons.size() != 1 || impls.size() < 2) return std::nullopt;
  return *reasons.begin();
}

}  // namespace

std::string pipeline_flags_config(const std::vector<std::string>& specs) {
  std::string entries, dtypes;
  std::set<std::string> dtypes_given;
  for (const auto& spec : specs) {
    std::set<std::string> keys;
    auto colon = spec.find(':');
    std::string name = spec.substr(0, colon), params;
    if (name.empty() || name.find_first_of("{}[],:#\"' ") != std::string::npos)
      throw UsageError(fmt::format("--pipeline '{}': expected NAME[:key=value,...], e.g. resnet50:batch=64", spec));
    if (colon != std::string::npos) {
      std::string rest = spec.substr(colon + 1);
      std::size_t at = 0;
      while (at <= rest.size()) {
        auto comma = rest.find(',', at);
        std::string kv = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size() || kv.find_first_of("{}[]:#\"' ") != std::string::npos)
          throw UsageError(fmt::format("--pipeline '{}': '{}' is not key=value", spec, kv));
        if (!keys.insert(kv.substr(0, eq)).second)
          throw UsageError(fmt::format("--pipeline '{}': '{}' is given twice", spec, kv.substr(0, eq)));
        if (kv.substr(0, eq) == "dtype") {
          if (dtypes_given.insert(kv.substr(eq + 1)).second) dtypes += (dtypes.empty() ? "" : ", ") + kv.substr(eq + 1);
        }
        else params += fmt::format(", {}: {}", kv.substr(0, eq), kv.substr(eq + 1));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
    }
    entries += fmt::format("  - {{name: {}{}}}\n", name, params);
  }
  return (dtypes.empty() ? "" : "dtypes: [" + dtypes + "]\n") + "pipelines:\n" + entries;
}

Plan load_pipeline_flags(const std::vector<std::string>& specs, int threads, const std::string& device) {
  const std::string yaml = pipeline_flags_config(specs);
  try {
    return load_config_text(yaml, "--pipeline", threads, device);
  } catch (const ConfigError& e) {
    // The user wrote flags, not this YAML: quote the flag its line came from (one line per
    // spec after `pipelines:`; the dtypes line stands for the specs that give a dtype).
    const bool dtypes_line = yaml.starts_with("dtypes:");
    const int index = e.line - (dtypes_line ? 3 : 2);
    std::vector<std::string> quoted;
    if (index >= 0 && index < int(specs.size())) quoted.push_back(specs[std::size_t(index)]);
    else
      for (const auto& spec : specs)
        if (!(dtypes_line && e.line == 1) || spec.find("dtype=") != std::string::npos) quoted.push_back(spec);
    std::string flags;
    for (const auto& q : quoted) flags += fmt::format("{}--pipeline '{}'", flags.empty() ? "" : " ", q);
    throw UsageError(fmt::format("{}: {}", flags, e.detail));
  }
}

int run_pipelines(std::vector<pipeline::PlannedPipeline> pipelines, std::vector<Case> cases, const RunOptions& options,
                  RunOutput out, const std::function<bool()>& interrupted) {
  if (out.dir.empty()) {
    auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    out.dir = fmt::format("opmeter-results/{:%Y%m%d-%H%M%S}", fmt::localtime(t));
  }
  auto results = run_cases_in_dir(cases, options, out);
  std::set<std::string> tried;  // layer cases run so far, over the rounds (not the end-to-end ones)
  auto add_tried = [&] {
    for (const auto& p : pipelines)
      for (std::size_t i = 0; i < p.pipeline.layers.size(); ++i) tried.insert(p.layer_case(i).to_string());
  };
  add_tried();
  for (int round = 0; round < kMaxRounds && !interrupted(); ++round) {
    if (auto why = backend_skip_reason(tried, results)) {
      fmt::print(stderr, "opmeter: every layer was skipped for one reason, which applies to every impl here: {}\n", *why);
      break;
    }
    if (!pipeline::advance_skipped(pipelines, results)) break;
    std::set<std::string> have;
    for (const auto& c : cases) have.insert(c.to_string());
    std::size_t before = cases.size();
    add_tried();
    for (auto& c : pipeline::pipeline_cases(pipelines))
      if (have.insert(c.to_string()).second) cases.push_back(c);
    if (cases.size() == before) break;
    fmt::print(stderr, "opmeter: {} layer(s) skipped by their impl: trying the next impl\n", cases.size() - before);
    out.resume = true;
    results = run_cases_in_dir(cases, options, out);
  }
  if (interrupted()) return results_exit_code(results);

  auto context = read_context(out.dir);
  std::vector<pipeline::PipelineSummary> summaries;
  for (const auto& p : pipelines) {
    pipeline::PipelineRun run;
    run.pipeline = p.pipeline;
    run.device = p.like.device;
    run.layer_results = pipeline::layer_results(p, results);
    run.idle_power_w = idle_power(context, p.like);
    if (p.end_to_end)
      for (const auto& r : results)
        if (r.case_string == p.end_to_end->to_string()) run.end_to_end = &r;
    run.end_to_end_scale = p.end_to_end_scale;
    summaries.push_back(pipeline::summarize(run));
  }
  auto written = pipeline::write_pipeline_outputs(out.dir, summaries);
  for (const auto& s : summaries) pipeline::print_pipeline_summary(std::cerr, s);
  fmt::print(stderr, "opmeter: pipeline results in {}/ ({})\n", out.dir, fmt::join(written, ", "));
  return results_exit_code(results);
}

}  // namespace opmeter
