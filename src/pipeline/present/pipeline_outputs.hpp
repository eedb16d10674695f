#pragma once
// A run's pipeline files, beside its results:
//   pipelines.json       every summary field and per-layer rows (schema opmeter-pipelines/1)
//   summary.csv          one row per pipeline
//   pipeline_layers.csv  one row per layer of every pipeline
//   pipeline-<name>.log  per pipeline: the layer table and the totals, to read
// and reading pipelines.json back for `opmeter report`.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/pipeline_plan.hpp"
#include "pipeline/present/pipeline_summary.hpp"

namespace opmeter::pipeline {

inline constexpr const char* kPipelinesSchema = "opmeter-pipelines/1";
inline constexpr const char* kPipelinesFile = "pipelines.json";

nlohmann::json to_json(const PipelineSummary& s);
// Throws UsageError naming the field that is missing or of the wrong type.
PipelineSummary summary_from_json(const nlohmann::json& j);
nlohmann::json pipelines_json(const std::vector<PipelineSummary>& summaries);  // {schema, pipelines}

std::string summary_csv(const std::vector<PipelineSummary>& summaries);
std::string layers_csv(const std::vector<PipelineSummary>& summaries);
std::string pipeline_log(const PipelineSummary& s);
// pipeline-<name>.log for each summary, in order: the name made safe for a file name, and the
// device added where two summaries share a name (one pipeline on the CPU and the GPU).
std::vector<std::string> log_file_names(const std::vector<PipelineSummary>& summaries);

// Writes the files above into `dir` (each atomically; OutputError naming the file on failure).
// Returns the names of the files written.
std::vector<std::string> write_pipeline_outputs(const std::string& dir, const std::vector<PipelineSummary>& summaries);

// The pipelines of a results directory (its pipelines.json), each with `dir` as its source; empty
// when it has none. UsageError for a file that is not valid pipelines JSON of this schema.
std::vector<PipelineSummary> read_pipelines(const std::string& dir);

// What a dry run shows of a planned pipeline: its totals, then per layer its count, params, MACs
// and the case it runs as.
std::string planned_pipeline_text(const PlannedPipeline& p);

// A few lines for the console at the end of a run: totals and the top 3 layers by time.
void print_pipeline_summary(std::ostream& out, const PipelineSummary& s);

// Display helpers: "12.3 mJ", "11.69 M", "batch=1, image=224", "resnet18 fp32 cpu batch=1" (the
// batch and every parameter off the built-in pipeline's defaults: "... batch=1 image=32").
std::string human_energy(double joules);
std::string human_count(double n);
std::string params_text(const PipelineSummary& s);
std::string params_in_parens(const PipelineSummary& s);  // " (batch=1, image=224)", or "" when none
std::string display_name(const PipelineSummary& s);

}  // namespace opmeter::pipeline
