// `opmeter merge TREE... -o MERGED`: the ranks of a sharded run (or runs of one config on several
// machines) joined into one results directory with a fleet view.
#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cli/check_join.hpp"
#include "cli/commands.hpp"
#include "opmeter/errors.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "report/report.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"
#include "results/run_dir.hpp"
#include "scale/merge.hpp"
#include "util/output_path.hpp"

namespace opmeter {

void add_merge_command(CLI::App& app, MergeArgs& a) {
  auto* cmd = app.add_subcommand("merge",
                                 "join the results of a sharded run's ranks (or of several machines) into one; "
                                 "a sharded check's check.json files into one");
  cmd->add_option("runs", a.inputs, "results trees (a sharded run's --out) or results directories")->required();
  cmd->add_option("-o,--out", a.out, "the merged results directory to write (new)")->required();
  cmd->add_flag("--force", a.force, "merge runs of different settings or opmeter versions");
}

namespace {
// Whether `out` is `tree` or inside it: a later merge, report or compare of the tree would read
// the merged set back as one more rank, and count every result twice.
bool inside(const std::string& out, const std::string& tree) {
  namespace fs = std::filesystem;
  const auto o = fs::weakly_canonical(out), t = fs::weakly_canonical(tree);
  auto [end, _] = std::mismatch(t.begin(), t.end(), o.begin(), o.end());
  return end == t.end();
}
}  // namespace

int merge_command(const MergeArgs& a) {
  for (auto& input : a.inputs)
    if (inside(a.out, input))
      throw UsageError(fmt::format("-o {} is inside {}, which merge reads: a later merge or report of {} would count "
                                   "the merged results again; write it elsewhere", a.out, input, input));
  refuse_a_used_output(a.out);
  // A sharded `opmeter check`'s tree: its ranks' check.json joined into one.
  if (std::all_of(a.inputs.begin(), a.inputs.end(), [](const std::string& in) { return !check_files_in(in).empty(); }))
    return join_checks(a.inputs, a.out, a.force);
  std::vector<scale::RankRun> runs;
  std::set<std::filesystem::path> seen;  // a run given twice would count its results twice
  for (auto& input : a.inputs)
    for (auto& dir : scale::run_dirs_in(input)) {
      if (!seen.insert(std::filesystem::weakly_canonical(dir)).second)
        throw UsageError(fmt::format("merge: {} is given twice (or in two of the trees given)", dir));
      runs.push_back(scale::load_rank(dir));
      if (runs.back().results.empty())
        fmt::print(stderr, "opmeter: warning: {} holds no results (a run stopped before its first case finished)\n",
                   dir);
    }
  scale::name_machines(runs);  // hostA/results and hostB/results stay two machines
  auto conflicts = scale::merge_conflicts(runs);
  for (auto& c : conflicts) fmt::print(stderr, "opmeter: {}: {}\n", a.force ? "warning" : "error", c);
  if (!conflicts.empty() && !a.force)
    throw UsageError(fmt::format("{} of the {} runs do not belong with the first ({}); give --force to merge them anyway",
                                 conflicts.size(), runs.size(), runs.front().name));
  scale::Merged m = scale::merge_runs(runs);

  RunDirectory out(a.out, false);
  write_atomically(out.file(kRunFile), dump_json({{"run", m.run}, {"context", m.context}}, 2) + "\n");
  MultiReporter reporter;
  reporter.add(make_jsonl_reporter(out.file("results.jsonl")));
  for (auto& name : parse_formats("")) reporter.add(ReporterRegistry::global().find(name)->make(a.out));
  reporter.begin(m.context, m.results.size());
  for (auto& r : m.results) reporter.report(r);
  reporter.end(m.results);
  // The runs' pipeline totals (pipelines.json), each run's in turn, and the report again with them.
  std::vector<pipeline::PipelineSummary> pipelines;
  for (auto& run : runs) {
    auto found = pipeline::read_pipelines(run.dir);
    for (auto& p : found) p.machine = run.name;
    pipelines.insert(pipelines.end(), found.begin(), found.end());
  }
  if (!pipelines.empty()) {
    pipeline::write_pipeline_outputs(a.out, pipelines);
    write_report_files(ResultSet{a.out, ResultsFormat::results_json, m.context, m.results}, pipelines);
  }

  auto fleet = scale::fleet_view(m.results, m.machines);
  if (auto md = scale::fleet_markdown(fleet, m.machines); !md.empty()) {
    write_atomically(out.file("fleet.md"), md);
    write_atomically(out.file("fleet.json"), dump_json(scale::fleet_json(fleet, m.machines), 2) + "\n");
  }
  std::size_t outliers = 0;
  for (auto& f : fleet)
    for (auto& e : f.entries) outliers += e.outlier;
  fmt::print(stderr, "opmeter: {} results from {} runs -> {}/ ({} case(s) on several machines, {} outlier(s){})\n",
             m.results.size(), runs.size(), a.out, fleet.size(), outliers, fleet.empty() ? "" : "; see fleet.md, fleet.json and report.html");
  return results_exit_code(m.results) == 1 ? 1 : 0;
}

}  // namespace opmeter
