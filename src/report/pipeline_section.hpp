#pragma once
// The report's Pipelines section, in HTML and markdown, from the summaries of pipelines.json.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/present/pipeline_summary.hpp"

namespace opmeter {

// The section's HTML (empty without pipelines); its charts' specs are appended to `specs`
// ({id, spec} each, as the page's renderer reads them). `sources` (parallel, or empty) names the
// run each came from, to tell apart two of one name (pipeline_labels).
std::string pipelines_html(const std::vector<pipeline::PipelineSummary>& summaries, nlohmann::json& specs,
                           const std::vector<std::string>& sources = {});
// "## Pipelines": the summary table, missing layers and the top layers of each pipeline.
std::string pipelines_markdown(const std::vector<pipeline::PipelineSummary>& summaries,
                               const std::vector<std::string>& sources = {});

}  // namespace opmeter
