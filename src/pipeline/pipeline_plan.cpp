// Pipelines to cases, and the rounds that move skipped layers to their next impl.
#include "pipeline/pipeline_plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "opmeter/backend.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/pipeline.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::pipeline {

Case PlannedPipeline::layer_case(std::size_t layer) const {
  Case c = like;
  const Layer& l = pipeline.layers[layer];
  c.op = l.kase.op;
  c.params = l.kase.params;
  c.dtype = pipeline.dtype;
  c.impl = candidates[layer][chosen[layer]];
  c.label = pipeline.name + ": " + l.label;
  return c;
}

namespace {

// Whether `impl` declares the case's backend and dtype, and (here_too) runs it on this machine.
bool takes(const ImplDef& impl, const Case& c, const std::string& backend, bool here_too) {
  if (!impl.runs_on(backend)) return false;
  if (std::find(impl.dtypes.begin(), impl.dtypes.end(), c.dtype) == impl.dtypes.end()) return false;
  if (!here_too || !impl.supports) return true;
  return impl.supports(c).ok;
}

// The impls named first, in their order; then the op's own preferences (ImplDef::preference).
// Those that run the case here; where none does (bf16 on a CPU whose oneDNN has none), those that
// take its dtype, so that the layer is measured `skipped` with their reasons, and the rest of the
// pipeline (and the run) still is.
std::vector<std::string> candidates_for(const Case& c, const std::string& backend,
                                        const std::vector<std::string>& preferred, bool here_too = true) {
  std::vector<std::string> order = preferred;
  std::vector<const ImplDef*> by_preference;
  for (const ImplDef* impl : opmeter::Registry::global().impls_of(c.op))
    if (impl->preference > 0) by_preference.push_back(impl);
  std::stable_sort(by_preference.begin(), by_preference.end(),
                   [](const ImplDef* a, const ImplDef* b) { return a->preference > b->preference; });
  for (const ImplDef* impl : by_preference)
    if (std::find(order.begin(), order.end(), impl->impl) == order.end()) order.push_back(impl->impl);
  std::vector<std::string> out;
  for (const auto& name : order) {
    const ImplDef* impl = opmeter::Registry::global().impl(c.op, name);
    if (!impl) continue;
    const bool named = std::find(preferred.begin(), preferred.end(), name) != preferred.end();
    if (impl->on_request && !named) continue;
    Case probe = c;
    probe.impl = name;
    if (takes(*impl, probe, backend, here_too)) out.push_back(name);
  }
  if (out.empty() && here_too) return candidates_for(c, backend, preferred, false);
  return out;
}

}  // namespace

PlannedPipeline plan_pipeline(Pipeline p, const Case& like, const std::vector<std::string>& impls, bool end_to_end) {
  PlannedPipeline planned;
  planned.like = like;
  planned.like.label.clear();
  const std::string backend = backend_of(like).name();
  for (auto& layer : p.layers) {
    Case c = like;
    c.op = layer.kase.op;
    c.params = layer.kase.params;
    c.dtype = p.dtype;
    auto names = candidates_for(c, backend, impls);
    if (names.empty())
      throw CaseError(fmt::format("pipeline {}: layer '{}' ({}, {}) has no impl that runs it on {}", p.name, layer.label,
                                  c.op, to_string(c.dtype), like.device));
    planned.candidates.push_back(std::move(names));
    planned.chosen.push_back(0);
  }
  // A built-in pipeline's model end to end, by the op that registered how.
  const PipelineDef* def = pipeline::Registry::global().find(p.name);
  const auto& whole = pipeline::Registry::global().end_to_end();
  if (end_to_end && def && whole) {
    planned.end_to_end = whole(p, like);
    planned.end_to_end_scale = def->end_to_end_scale;
  }
  planned.pipeline = std::move(p);
  return planned;
}

std::vector<Case> pipeline_cases(const std::vector<PlannedPipeline>& pipelines) {
  std::vector<Case> cases;
  std::set<std::string> seen;
  auto add = [&](const Case& c) {
    if (seen.insert(c.to_string()).second) cases.push_back(c);
  };
  for (const auto& p : pipelines) {
    for (std::size_t i = 0; i < p.pipeline.layers.size(); ++i) add(p.layer_case(i));
    if (p.end_to_end) add(*p.end_to_end);
  }
  return cases;
}

namespace {
std::map<std::string, const Result*> by_case(const std::vector<Result>& results) {
  std::map<std::string, const Result*> m;
  for (const auto& r : results) m[r.case_string] = &r;
  return m;
}
}  // namespace

bool advance_skipped(std::vector<PlannedPipeline>& pipelines, const std::vector<Result>& results) {
  auto found = by_case(results);
  bool moved = false;
  for (auto& p : pipelines)
    for (std::size_t i = 0; i < p.pipeline.layers.size(); ++i) {
      auto it = found.find(p.layer_case(i).to_string());
      if (it == found.end() || it->second->status != Status::skipped) continue;
      if (p.chosen[i] + 1 < p.candidates[i].size()) {
        ++p.chosen[i];
        moved = true;
      }
    }
  return moved;
}

std::vector<const Result*> layer_results(const PlannedPipeline& p, const std::vector<Result>& results) {
  auto found = by_case(results);
  std::vector<const Result*> out;
  for (std::size_t i = 0; i < p.pipeline.layers.size(); ++i) {
    auto it = found.find(p.layer_case(i).to_string());
    out.push_back(it == found.end() ? nullptr : it->second);
  }
  return out;
}

}  // namespace opmeter::pipeline
