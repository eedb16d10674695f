#pragma once
// Names that tell a report's pipelines apart. Two runs of one pipeline (tiny run twice, resnet18
// at threads 1 and 2) share a display name; as a chart's category they would be one bar of the
// two values summed, and as headings two that cannot be told apart.
#include <set>
#include <string>
#include <vector>

#include "pipeline/present/pipeline_summary.hpp"

namespace opmeter {

// The thread counts of the pipeline's host layers, from their case strings (empty on a GPU).
std::set<int> pipeline_threads(const pipeline::PipelineSummary& s);

// One label per summary, all distinct: pipeline::display_name, and where two share it, their
// threads (when those differ), then the name of their run's folder (PipelineSummary::source),
// then "#k".
std::vector<std::string> pipeline_labels(const std::vector<pipeline::PipelineSummary>& summaries);

}  // namespace opmeter
