// The rounds of a pipeline run, and the summaries at their end.
#include "pipeline/pipeline_rounds.hpp"

#include <optional>
#include <set>

#include <fmt/format.h>

namespace opmeter::pipeline {
namespace {

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

}  // namespace

RoundResults run_rounds(std::vector<PlannedPipeline>& pipelines, std::vector<Case> cases, const RunRound& run,
                        const std::function<bool()>& interrupted) {
  RoundResults round = run(cases, false);
  std::set<std::string> tried;  // layer cases run so far, over the rounds (not the end-to-end ones)
  auto add_tried = [&] {
    for (const auto& p : pipelines)
      for (std::size_t i = 0; i < p.pipeline.layers.size(); ++i) tried.insert(p.layer_case(i).to_string());
  };
  add_tried();
  for (int n = 0; n < kMaxRounds && !interrupted(); ++n) {
    if (auto why = backend_skip_reason(tried, round.results)) {
      fmt::print(stderr, "opmeter: every layer was skipped for one reason, which applies to every impl here: {}\n", *why);
      break;
    }
    if (!advance_skipped(pipelines, round.results)) break;
    std::set<std::string> have;
    for (const auto& c : cases) have.insert(c.to_string());
    const std::size_t before = cases.size();
    add_tried();
    for (auto& c : pipeline_cases(pipelines))
      if (have.insert(c.to_string()).second) cases.push_back(c);
    if (cases.size() == before) break;
    fmt::print(stderr, "opmeter: {} layer(s) skipped by their impl: trying the next impl\n", cases.size() - before);
    round = run(cases, true);
  }
  return round;
}

std::vector<PipelineSummary> summarize_pipelines(const std::vector<PlannedPipeline>& pipelines, const RoundResults& round) {
  std::vector<PipelineSummary> summaries;
  for (const auto& p : pipelines) {
    PipelineRun run;
    run.pipeline = p.pipeline;
    run.device = p.like.device;
    run.layer_results = layer_results(p, round.results);
    for (std::size_t i = 0; i < p.pipeline.layers.size(); ++i) run.layer_cases.push_back(p.layer_case(i).to_string());
    run.idle_power_w = idle_power(round.context, p.like);
    if (p.end_to_end)
      for (const auto& r : round.results)
        if (r.case_string == p.end_to_end->to_string()) run.end_to_end = &r;
    run.end_to_end_scale = p.end_to_end_scale;
    summaries.push_back(summarize(run));
  }
  return summaries;
}

}  // namespace opmeter::pipeline
