// `opmeter report RESULTS...` and `opmeter compare BASE NEW`: reading results back.
#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/compare.hpp"
#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "opmeter/errors.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"
#include "scale/merge.hpp"
#include "util/output_path.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

std::string markdown_path(const ReportArgs& a) {
  if (!a.markdown.empty()) return a.markdown;
  const std::string ext = ".html";
  if (a.out.size() > ext.size() && a.out.compare(a.out.size() - ext.size(), ext.size(), ext) == 0)
    return a.out.substr(0, a.out.size() - ext.size()) + ".md";
  return a.out + ".md";
}

void write_output(const std::string& path, const std::string& content) {
  try {
    write_atomically(path, content);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("cannot write {}: {}", path, e.what()));
  }
}

// Results files are parsed concurrently: parsing JSON is most of the time report and compare take.
std::vector<ResultSet> load_all(const std::vector<std::string>& paths) {
  std::vector<std::future<ResultSet>> loading;
  for (auto& p : paths)  // a sharded run's tree of ranks is one input
    loading.push_back(std::async(std::launch::async, [p] { return scale::is_run_tree(p) ? scale::load_run_tree(p) : load_results(p); }));
  std::vector<ResultSet> sets;
  for (auto& f : loading) sets.push_back(f.get());  // the first bad input's error, in argument order
  for (auto& s : sets)
    for (auto& note : s.notes) fmt::print(stderr, "opmeter: note: {}\n", note);
  return sets;
}

// `report X X` would show every row twice.
std::vector<std::string> without_repeats(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto& p : paths) {
    if (seen.insert(results_identity(p)).second) out.push_back(p);
    else fmt::print(stderr, "opmeter: note: {} is the same results as an earlier argument: shown once\n", p);
  }
  return out;
}

// The pipelines of each results directory given (or of the directory of a results file). A bad
// pipelines.json costs its section, not the report.
std::vector<pipeline::PipelineSummary> load_pipelines(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<pipeline::PipelineSummary> all;
  std::set<std::string> seen;  // two files of one directory: its pipelines once
  for (auto& p : paths) {
    std::error_code ec;
    fs::path dir = fs::is_directory(p, ec) ? fs::path(p) : fs::path(p).parent_path();
    if (dir.empty()) dir = ".";
    if (!seen.insert(fs::weakly_canonical(dir, ec).string()).second) continue;
    try {
      auto found = pipeline::read_pipelines(dir.string());
      all.insert(all.end(), found.begin(), found.end());
    } catch (const UsageError& e) {
      fmt::print(stderr, "opmeter: warning: {}; the report has no Pipelines section for {}\n", e.what(), p);
    }
  }
  return all;
}

}  // namespace

void add_report_command(CLI::App& app, ReportArgs& a) {
  auto* cmd = app.add_subcommand("report", "an HTML report with charts (and report.md) from one or more results");
  cmd->add_option("results", a.inputs, "results directories, results.json or results.jsonl files")->required();
  cmd->add_option("-o,--out", a.out, "the HTML file to write (default: report.html)");
  cmd->add_option("--md", a.markdown, "the markdown summary to write (default: the HTML's name with .md)");
  cmd->add_flag("--no-md", a.no_markdown, "write no markdown summary");
}

int report_command(const ReportArgs& a) {
  check_output_file(a.out, "report -o");
  check_not_an_input(a.out, "report -o", a.inputs);
  if (!a.no_markdown) {
    check_output_file(markdown_path(a), "report --md");
    check_not_an_input(markdown_path(a), "report --md", a.inputs);
    check_not_an_input(markdown_path(a), "report --md", {a.out});  // the HTML written first
  }
  auto inputs = without_repeats(a.inputs);
  auto sets = load_all(inputs);
  auto pipelines = load_pipelines(inputs);
  write_output(a.out, html_report(sets, pipelines));
  std::string written = a.out;
  if (!a.no_markdown) {
    write_output(markdown_path(a), markdown_report(sets, pipelines));
    written += ", " + markdown_path(a);
  }
  fmt::print(
      stderr, "opmeter: {}{} from {} source{} -> {}\n", count_of(merged_results(sets).size(), "case"),
      pipelines.empty() ? "" : fmt::format(", {} pipeline{}", pipelines.size(), pipelines.size() == 1 ? "" : "s"),
      sets.size(), sets.size() == 1 ? "" : "s", written);
  return 0;
}

void add_compare_command(CLI::App& app, CompareArgs& a) {
  auto* cmd = app.add_subcommand("compare", "compare two runs case by case; exit 1 when NEW is slower (or too few samples to tell)");
  cmd->add_option("base", a.base, "the baseline: a results directory, results.json or results.jsonl")->required();
  cmd->add_option("new", a.neu, "the run to judge, same kinds as BASE")->required();
  cmd->add_option("--fail-above", a.fail_above_pct, "fail when a case is slower, or untestable (too few samples), by more than PCT (default 5)")
      ->check(kFinite)->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--threshold", a.threshold_pct, "changes below PCT are 'same' (default 1)")
      ->check(kFinite)->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--alpha", a.alpha, "significance level of the Mann-Whitney U test (default 0.05)")
      ->check(kFinite)->check(CLI::Range(1e-12, 0.5));
  cmd->add_option("--format", a.format, "md (default) or json")->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("-o,--out", a.out, "write the comparison here instead of standard output");
  cmd->add_flag("--sustained", a.sustained, "compare GPU cases on their sustained figure (steady power) instead of the burst median");
  cmd->add_flag("--allow-missing", a.allow_missing,
                "cases BASE measured and NEW lacks pass the gate (NEW ran a subset); by default they fail it");
}

namespace {
// Whether two sets hold the same cases with identical samples (a copied results directory).
bool same_samples(const ResultSet& x, const ResultSet& y) {
  if (x.results.size() != y.results.size() || x.results.empty()) return false;
  std::map<std::string, const std::vector<double>*> samples;
  for (auto& r : x.results) samples[r.case_string] = &r.samples;
  for (auto& r : y.results) {
    auto it = samples.find(r.case_string);
    if (it == samples.end() || *it->second != r.samples) return false;
  }
  return std::any_of(x.results.begin(), x.results.end(), [](const Result& r) { return !r.samples.empty(); });
}
}  // namespace

int compare_command(const CompareArgs& a) {
  if (!a.out.empty()) {
    check_output_file(a.out, "compare --out");
    check_not_an_input(a.out, "compare --out", {a.base, a.neu});
  }
  auto sets = load_all({a.base, a.neu});
  const ResultSet &base = sets[0], &neu = sets[1];
  for (auto [set, path] : {std::pair{&base, &a.base}, std::pair{&neu, &a.neu}})
    if (auto unsampled = unsampled_record(*set); !unsampled.empty())
      throw UsageError(
          fmt::format("{}: {} is ok but has no samples (samples_s stripped?): compare tests the raw "
                      "samples of both runs",
                      *path, unsampled));
  CompareOptions o{a.alpha, a.threshold_pct, a.fail_above_pct, a.sustained, a.allow_missing};
  Comparison c = compare_results(base, neu, o);
  if (results_identity(a.base) == results_identity(a.neu))
    c.context_warnings.insert(c.context_warnings.begin(),
                              fmt::format("BASE and NEW are the same results ({}): this compares a run with itself", a.base));
  else if (same_samples(base, neu))  // a copy: two runs never draw the same samples
    c.context_warnings.insert(c.context_warnings.begin(),
                              fmt::format("BASE and NEW hold the very same samples ({} and {}): one is a copy of the other",
                                          a.base, a.neu));
  if (c.cases.empty())
    throw UsageError(fmt::format("{} and {} have no case in common ({} and {} cases): nothing to compare", a.base,
                                 a.neu, base.results.size(), neu.results.size()));
  if (const auto& g = c.overall; g.compared + g.broken + g.fixed == 0 && c.missing.empty())
    throw UsageError(
        fmt::format("{} and {} measured none of their {} common cases on either side (all skipped or "
                    "failed): nothing to compare",
                    a.base, a.neu, c.cases.size()));
  for (auto& w : c.context_warnings) fmt::print(stderr, "opmeter: WARNING: {}\n", w);
  std::string text = a.format == "json" ? dump_json(compare_json(c, o), 2) + "\n" : compare_markdown(c, o);
  if (a.out.empty()) fmt::print("{}", text);
  else write_output(a.out, text);
  const auto& g = c.overall;
  std::size_t failing = std::count_if(c.cases.begin(), c.cases.end(), [](auto& x) { return x.fails_gate; });
  fmt::print(stderr, "opmeter: {}: {}, geomean time {:+.2f}%, {}{}{}\n", c.gate_failed() ? "FAIL" : "pass",
             count_of(g.compared, "case"), (g.geomean_ratio - 1) * 100, verdict_counts(g),
             c.missing.empty() ? "" : fmt::format(", {} missing from NEW", c.missing.size()),
             failing ? fmt::format("; {} case(s) fail the gate (--fail-above {}%)", failing, a.fail_above_pct) : "");
  return c.gate_failed() ? 1 : 0;
}

}  // namespace opmeter
