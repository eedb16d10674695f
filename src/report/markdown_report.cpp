// report.md: the report's tables in markdown, fit for committing next to the code they measure.
#include <map>

#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "report/pipeline_section.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "report/run_names.hpp"
#include "scale/merge.hpp"
#include "util/markdown_cell.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

// The context keys a reader needs to judge the numbers; the HTML report shows all of them.
const std::vector<std::string> kKeyContext = {"cpu.model", "cpu.usable_cpus", "cpu.isa_flags", "cpu.governor",
                                              "memory.total_bytes", "opmeter.version", "opmeter.git_sha", "date"};

bool shown(const std::string& key) {
  for (auto& k : kKeyContext)
    if (key == k) return true;
  return key.rfind("libraries.", 0) == 0 || key.rfind("gpus", 0) == 0 || key.rfind("cuda.", 0) == 0;
}

// The fastest result per op and dtype, a quantization recipe ranked on its own (an int4-weight
// linear is not the best bf16 linear); in a report of several runs, named with its run.
std::string best_table(const std::vector<ResultSet>& sets) {
  struct Best {
    const Result* r = nullptr;
    std::string run;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Best> best;  // (op, dtype, recipe) -> fastest rate
  auto rate = [](const Result& r) { return r.gflops > 0 ? r.gflops : r.gbps; };
  const auto runs = short_run_names(sets);
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (auto& r : sets[i].results) {
      // A training step or phase is another workload than the op's forward: the training table has it.
      if (r.status != Status::ok || !(rate(r) > 0) || linear::training(r.kase)) continue;
      auto& b = best[{r.kase.op, std::string(to_string(r.kase.dtype)), r.kase.get_or(linear::kQuant, "")}];
      if (!b.r || rate(*b.r) < rate(r)) b = {&r, runs[i]};
    }
  if (best.empty()) return "";
  const bool several = sets.size() > 1;
  std::string out = fmt::format(
      "## Best per op and dtype\n\n| op | dtype | impl | shape |{} median | GFLOP/s | GB/s | % of peak | "
      "% of roofline |\n|---|---|---|---|{}---:|---:|---:|---:|---:|\n",
      several ? " run |" : "", several ? "---|" : "");
  for (auto& [key, b] : best) {
    const Result* r = b.r;
    const auto& [op, dtype, recipe] = key;
    out += fmt::format(
        "| {} | {} | {} | {} |{} {} | {} | {} | {} | {} |\n", markdown_cell(op),
        markdown_cell(recipe.empty() ? dtype : dtype + ", quant=" + recipe), markdown_cell(r->kase.impl),
        markdown_cell(r->kase.params_string()), several ? fmt::format(" {} |", markdown_cell(b.run)) : "",
        human_time(r->summary.median), r->gflops > 0 ? fmt::format("{:.1f}", r->gflops) : "-",
        r->gbps > 0 ? fmt::format("{:.1f}", r->gbps) : "-", r->pct_peak ? fmt::format("{:.1f}%", *r->pct_peak) : "-",
        r->efficiency ? fmt::format("{:.1f}%", *r->efficiency * 100) : "-");
  }
  return out + "\n";
}

}  // namespace

std::string markdown_report(const std::vector<ResultSet>& sets, const std::vector<pipeline::PipelineSummary>& pipelines) {
  auto results = merged_results(sets);
  std::string out = "# opmeter report\n\n";
  for (auto& s : sets)
    out += fmt::format("- `{}`: {}, {}\n", markdown_code(s.source), describe(s.format),
                       count_of(s.results.size(), "case"));

  auto [by_status, unconverged] = tally(results);
  std::string counts;
  for (auto& [status, n] : by_status) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, status);
  out += fmt::format("\n{}: {}{}.\n\n", count_of(results.size(), "case"), counts.empty() ? "none" : counts,
                     unconverged ? fmt::format(" ({} unconverged)", unconverged) : "");

  for (auto& s : sets) {
    if (s.context.empty()) continue;
    out += fmt::format("## Machine ({})\n\n| | |\n|---|---|\n", markdown_cell(s.source));
    for (auto& [k, v] : flatten_json(s.context))
      if (shown(k)) out += fmt::format("| {} | {} |\n", markdown_cell(k), markdown_cell(v));
    if (s.context.contains("run")) {
      out += "\n**Run settings**\n\n| | |\n|---|---|\n";
      for (auto& [k, v] : flatten_json(s.context["run"]))
        out += fmt::format("| {} | {} |\n", markdown_cell(k), markdown_cell(v));
    }
    out += "\n";
  }
  out += best_table(sets);
  out += pipelines_markdown(pipelines);
  for (auto& s : sets)  // merged results of several machines (merge's output, or a tree given to report)
    if (auto machines = scale::machines_of(s.context); !machines.empty())
      out += scale::fleet_markdown(scale::fleet_view(s.results, machines), machines);
  if (sets.size() == 1) return out + "## Cases\n\n" + markdown_table(results);
  // Each run's recipes and steps against its own baselines: never one run's case against another's.
  std::vector<std::string> run_of;  // run_of[i]: the run results[i] came from
  const auto runs = short_run_names(sets);
  for (std::size_t i = 0; i < sets.size(); ++i) run_of.insert(run_of.end(), sets[i].results.size(), runs[i]);
  out += "## Cases\n\n" + cases_table(results, run_of);
  for (auto& s : sets)
    if (auto tables = derived_tables(s.results); !tables.empty())
      out += fmt::format("\n## Compared within `{}`\n{}", markdown_code(s.source), tables);
  return out;
}

}  // namespace opmeter
