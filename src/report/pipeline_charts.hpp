#pragma once
// The report's pipeline charts (Vega-Lite, data inline), from pipeline summaries.
#include <optional>
#include <vector>

#include "pipeline/present/pipeline_summary.hpp"
#include "report/charts.hpp"

namespace opmeter {

// Layers shown as their own segment in a pipeline's stacked bar; the rest are grouped by op.
inline constexpr std::size_t kPipelineSegments = 8;

// One pipeline: its per-layer time (latency x count) as a stacked horizontal bar, and its
// per-layer energy as another when the layers have energy. Nothing when no layer was measured.
// `index` makes the chart id unique when two summaries share a name; `label` titles it (empty:
// pipeline::display_name).
std::optional<Chart> pipeline_layers_chart(const pipeline::PipelineSummary& s, std::size_t index,
                                           std::size_t segments = kPipelineSegments, const std::string& label = "");
// The complete pipelines side by side: latency per pass, energy per sample, throughput. Each
// summary is a bar of its own, named by `labels` (parallel; empty: pipeline_labels), never stacked.
std::optional<Chart> pipeline_comparison_chart(const std::vector<pipeline::PipelineSummary>& summaries,
                                               std::vector<std::string> labels = {});
// Sum of layers beside the PyTorch model run end to end, where it ran; labels as above.
std::optional<Chart> pipeline_end_to_end_chart(const std::vector<pipeline::PipelineSummary>& summaries,
                                               std::vector<std::string> labels = {});

}  // namespace opmeter
