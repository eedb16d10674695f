#pragma once
// A pipeline run from start to summaries: the layer cases run like any others, then each layer
// its impl skipped moves to its next impl and those cases run in another round, until none moves;
// then each pipeline is summed up from the last round's results and the machine context.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/pipeline_plan.hpp"
#include "opmeter/result.hpp"
#include "pipeline/present/pipeline_summary.hpp"

namespace opmeter::pipeline {

// Rounds of fallback at most: a layer has at most this many impls to try after its first.
inline constexpr int kMaxRounds = 8;

// What a round gives back: every result so far (earlier rounds' included) and the machine
// context they ran in.
struct RoundResults {
  std::vector<Result> results;
  nlohmann::json context = nlohmann::json::object();
};

// Runs `cases`; `again` is false for the first round, true for each later one (which adds cases
// to the same run).
using RunRound = std::function<RoundResults(const std::vector<Case>& cases, bool again)>;

// Runs `cases` (the pipelines' and any others) with `run`, then the rounds that move skipped
// layers to their next impl; `pipelines` ends with each layer on the impl it last ran with.
// Stops early when `interrupted` says so, or when every layer was skipped for one reason by impls
// of several kinds (a backend's reason: no next impl escapes it), said once on stderr.
RoundResults run_rounds(std::vector<PlannedPipeline>& pipelines, std::vector<Case> cases, const RunRound& run,
                        const std::function<bool()>& interrupted);

// Each pipeline summed up from the results, with the idle power of where it ran (the context's).
std::vector<PipelineSummary> summarize_pipelines(const std::vector<PlannedPipeline>& pipelines, const RoundResults& round);

}  // namespace opmeter::pipeline
