#pragma once
// Names that tell a report's pipelines apart. Two runs of one pipeline (tiny run twice, resnet18
// at threads 1 and 2) share a display name; as a chart's category they would be one bar of the
// two values summed, and as headings two that cannot be told apart.
#include <set>
#include <string>
#include <vector>

#include "pipeline/present/pipeline_summary.hpp"
#include "results/result_set.hpp"

namespace opmeter {

// The thread counts of the pipeline's host layers, from their case strings (empty on a GPU).
std::set<int> pipeline_threads(const pipeline::PipelineSummary& s);

// The run each summary came from, parallel to `summaries`: the name of the set (its directory)
// holding one of its measured layers' results with the very median the summary shows, or "".
std::vector<std::string> pipeline_sources(const std::vector<ResultSet>& sets,
                                          const std::vector<pipeline::PipelineSummary>& summaries);

// One label per summary, all distinct: pipeline::display_name, and where two share it, their
// threads (when those differ), then their run (`sources`, parallel or empty), then "#k".
std::vector<std::string> pipeline_labels(const std::vector<pipeline::PipelineSummary>& summaries,
                                         const std::vector<std::string>& sources = {});

}  // namespace opmeter
