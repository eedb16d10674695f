#pragma once
// `opmeter report`: one self-contained HTML file (charts drawn by the bundled Vega-Lite) and a
// markdown summary, from one or more results.
#include <map>
#include <string>
#include <vector>

#include "pipeline/present/pipeline_summary.hpp"
#include "results/result_set.hpp"

namespace opmeter {

// Results of several sets, in order (the report shows them together).
std::vector<Result> merged_results(const std::vector<ResultSet>& sets);

// The HTML page. It loads nothing from the network (a Content-Security-Policy forbids it) and
// records how each chart rendered in a hidden element, #render-status, for tests. With
// pipelines (a run's pipelines.json), a Pipelines section.
std::string html_report(const std::vector<ResultSet>& sets, const std::vector<pipeline::PipelineSummary>& pipelines = {});
// Context, run settings, best result per op and dtype, pipelines, every case, fusion: for a repository.
std::string markdown_report(const std::vector<ResultSet>& sets,
                            const std::vector<pipeline::PipelineSummary>& pipelines = {});

// Writes report.html and report.md into the results directory `run.source` from the run's
// results and context, with its pipelines' section when it ran any. A failure is a warning on
// stderr (the results are saved). Returns the names of the files written.
std::vector<std::string> write_report_files(const ResultSet& run, const std::vector<pipeline::PipelineSummary>& pipelines = {});

// How many results have each status, and how many did not converge (for both report formats).
struct StatusTally {
  std::map<std::string, std::size_t> by_status;
  std::size_t unconverged = 0;
};
StatusTally tally(const std::vector<Result>& results);

// HTML text escaping (&, <, >, ").
std::string html_escape(const std::string& s);

}  // namespace opmeter
