// report.md: the report's tables in markdown, fit for committing next to the code they measure.
#include <map>

#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "report/pipeline_section.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "scale/merge.hpp"
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

std::string cell(std::string s) {
  for (auto& ch : s)
    if (ch == '|') ch = '/';
  return s;
}

std::string best_table(const std::vector<Result>& results) {
  std::map<std::pair<std::string, std::string>, const Result*> best;  // (op, dtype) -> fastest rate
  auto rate = [](const Result& r) { return r.gflops > 0 ? r.gflops : r.gbps; };
  for (auto& r : results) {
    // A training step or phase is another workload than the op's forward: the training table has it.
    if (r.status != Status::ok || !(rate(r) > 0) || linear::training(r.kase)) continue;
    auto& b = best[{r.kase.op, std::string(to_string(r.kase.dtype))}];
    if (!b || rate(*b) < rate(r)) b = &r;
  }
  if (best.empty()) return "";
  std::string out = "## Best per op and dtype\n\n| op | dtype | impl | shape | median | GFLOP/s | GB/s | % of peak | % of roofline |\n"
                    "|---|---|---|---|---:|---:|---:|---:|---:|\n";
  for (auto& [key, r] : best)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", key.first, key.second, r->kase.impl,
                       cell(r->kase.params_string()), human_time(r->summary.median),
                       r->gflops > 0 ? fmt::format("{:.1f}", r->gflops) : "-",
                       r->gbps > 0 ? fmt::format("{:.1f}", r->gbps) : "-",
                       r->pct_peak ? fmt::format("{:.1f}%", *r->pct_peak) : "-",
                       r->efficiency ? fmt::format("{:.1f}%", *r->efficiency * 100) : "-");
  return out + "\n";
}

}  // namespace

std::string markdown_report(const std::vector<ResultSet>& sets, const std::vector<pipeline::PipelineSummary>& pipelines) {
  auto results = merged_results(sets);
  std::string out = "# opmeter report\n\n";
  for (auto& s : sets)
    out += fmt::format("- `{}`: {}, {}\n", s.source, describe(s.format), count_of(s.results.size(), "case"));

  auto [by_status, unconverged] = tally(results);
  std::string counts;
  for (auto& [status, n] : by_status) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, status);
  out += fmt::format("\n{}: {}{}.\n\n", count_of(results.size(), "case"), counts.empty() ? "none" : counts,
                     unconverged ? fmt::format(" ({} unconverged)", unconverged) : "");

  for (auto& s : sets) {
    if (s.context.empty()) continue;
    out += fmt::format("## Machine ({})\n\n| | |\n|---|---|\n", s.source);
    for (auto& [k, v] : flatten_json(s.context))
      if (shown(k)) out += fmt::format("| {} | {} |\n", k, cell(v));
    if (s.context.contains("run")) {
      out += "\n**Run settings**\n\n| | |\n|---|---|\n";
      for (auto& [k, v] : flatten_json(s.context["run"])) out += fmt::format("| {} | {} |\n", k, cell(v));
    }
    out += "\n";
  }
  out += best_table(results);
  out += pipelines_markdown(pipelines);
  for (auto& s : sets)  // merged results of several machines (merge's output, or a tree given to report)
    if (auto machines = scale::machines_of(s.context); !machines.empty())
      out += scale::fleet_markdown(scale::fleet_view(s.results, machines), machines);
  if (sets.size() == 1) return out + "## Cases\n\n" + markdown_table(results);
  // Each run's recipes and steps against its own baselines: never one run's case against another's.
  out += "## Cases\n\n" + cases_table(results);
  for (auto& s : sets)
    if (auto tables = derived_tables(s.results); !tables.empty())
      out += fmt::format("\n## Compared within `{}`\n{}", s.source, tables);
  return out;
}

}  // namespace opmeter
