#pragma once
// The report's Pipelines section, in HTML and markdown, from the summaries of pipelines.json.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/present/pipeline_summary.hpp"

namespace opmeter {

// The section's HTML (empty without pipelines); its charts' specs are appended to `specs`
// ({id, spec} each, as the page's renderer reads them). Headings and rows are pipeline_labels.
std::string pipelines_html(const std::vector<pipeline::PipelineSummary>& summaries, nlohmann::json& specs);
// "## Pipelines": the summary table, missing layers and the top layers of each pipeline.
std::string pipelines_markdown(const std::vector<pipeline::PipelineSummary>& summaries);

}  // namespace opmeter
