// `opmeter run` with pipelines: the rounds (src/pipeline/pipeline_rounds.hpp) run in one results
// directory; then the pipeline files, the report with its Pipelines section, and the totals.
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "pipeline/pipeline_rounds.hpp"
#include "report/report.hpp"

namespace opmeter {

int run_pipelines(std::vector<pipeline::PlannedPipeline> pipelines, std::vector<Case> cases, const RunOptions& options,
                  RunOutput out, const std::function<bool()>& interrupted) {
  if (out.dir.empty()) out.dir = timestamped_dir("opmeter-results");  // every round writes into this one
  const bool report = writes_report(out);
  out.report = false;     // written once, at the end, with the pipelines
  out.run_notes = false;  // said once, of every round's results
  auto round = pipeline::run_rounds(
      pipelines, std::move(cases),
      [&](const std::vector<Case>& todo, bool again) {
        out.resume = out.resume || again;
        ResultSet set = run_cases_in_dir(todo, options, out);
        return pipeline::RoundResults{std::move(set.results), std::move(set.context)};
      },
      interrupted);
  const ResultSet run = {out.dir, ResultsFormat::results_json, round.context, round.results};
  say_run_notes(round.results, out.source);
  if (interrupted()) {  // no totals from a run cut short: the report of what finished
    if (report) write_report_files(run);
    return results_exit_code(round.results);
  }
  const auto summaries = pipeline::summarize_pipelines(pipelines, round);
  auto written = pipeline::write_pipeline_outputs(out.dir, summaries);
  if (report)
    for (auto& file : write_report_files(run, summaries)) written.push_back(file);
  for (const auto& s : summaries) pipeline::print_pipeline_summary(std::cerr, s);
  fmt::print(stderr, "opmeter: pipeline results in {}/ ({})\n", out.dir, fmt::join(written, ", "));
  return results_exit_code(round.results);
}

}  // namespace opmeter
