#pragma once
// From pipelines to cases: each layer becomes a case of the first impl that runs it where the
// pipeline runs (the user's impls first, then the op's by ImplDef::preference); identical layers
// share one case.
// A layer whose case comes back `skipped` tries its next impl in another round.
#include <optional>
#include <string>
#include <vector>

#include "opmeter/pipeline.hpp"
#include "opmeter/result.hpp"

namespace opmeter::pipeline {

struct PlannedPipeline {
  Pipeline pipeline;
  Case like;  // where it runs: device, threads, backend settings, hot
  // Per layer, the impls to try in order (those that run the layer's op on this backend and take
  // its dtype), and which of them the current round uses.
  std::vector<std::vector<std::string>> candidates;
  std::vector<std::size_t> chosen;
  std::optional<Case> end_to_end;  // the PyTorch model (op `model`), when asked for
  double end_to_end_scale = 1;     // model time x this = the pipeline's pass (OPT: 64 layers)

  Case layer_case(std::size_t layer) const;  // the layer's case with its chosen impl
};

// Plans a pipeline to run where `like` says with `impls` preferred (empty: the defaults).
// Throws CaseError when a layer's op has no impl here at all.
PlannedPipeline plan_pipeline(Pipeline p, const Case& like, const std::vector<std::string>& impls, bool end_to_end);

// Every layer case (and end-to-end case) of the pipelines, each once, in pipeline order.
std::vector<Case> pipeline_cases(const std::vector<PlannedPipeline>& pipelines);

// Moves each layer whose result says its impl cannot run it (`skipped`) to its next candidate.
// Returns whether any layer moved (then its new case needs running).
bool advance_skipped(std::vector<PlannedPipeline>& pipelines, const std::vector<Result>& results);

// The result of each layer's chosen case (nullptr when it has none), parallel to the layers.
std::vector<const Result*> layer_results(const PlannedPipeline& p, const std::vector<Result>& results);

}  // namespace opmeter::pipeline
