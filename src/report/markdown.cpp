// The end-of-run table: on the terminal, in results.md and in report.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/fusion.hpp"
#include "analysis/quantization.hpp"
#include "analysis/training.hpp"
#include "opmeter/result_fields.hpp"
#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"
#include "util/markdown_cell.hpp"

namespace opmeter {
namespace {

class MarkdownReporter : public Reporter {
 public:
  explicit MarkdownReporter(std::FILE* out) : out_(out) {}
  void end(const std::vector<Result>& all) override { fmt::print(out_, "\n{}", markdown_table(all)); }

 private:
  std::FILE* out_;
};

ReporterRegistrar md_reporter({
    .name = "md",
    .summary = "results.md: the table of cases in markdown",
    .files = {"results.md"},
    .order = 2,
    .make = [](const std::string& dir) {
      return make_end_file_reporter(dir, "results.md",
                                    [](const nlohmann::json&, const std::vector<Result>& all) { return markdown_table(all); });
    },
});

struct Column {
  std::string header;
  bool numeric;
  std::function<std::string(const Result&)> cell;
};

std::vector<Column> columns(const std::vector<Result>& results) {
  std::vector<Column> out;
  for (auto& name : markdown_columns()) {
    auto& f = result_field(name);
    if (f.markdown_if_any &&
        std::none_of(results.begin(), results.end(), [&](const Result& r) { return !f.value(r).is_null(); }))
      continue;
    out.push_back({f.markdown, f.numeric, f.cell});
  }
  // Metrics after the fields, headed by the first result that has each.
  for (auto& name : metric_names(results)) {
    for (auto& r : results)
      if (auto it = r.metrics.find(name); it != r.metrics.end()) {
        out.push_back({metric_header(name, it->second), true, [name](const Result& x) {
                         auto m = x.metrics.find(name);
                         return m == x.metrics.end() ? std::string("-") : format_metric(m->second);
                       }});
        break;
      }
  }
  return out;
}

// The recipe and training cases the quantization and training tables leave out because they did
// not finish: a count, so that a missing row is not read as never planned.
std::string unfinished_recipes_note(const std::vector<Result>& results) {
  std::size_t failed = 0, skipped = 0;
  for (auto& r : results) {
    if (r.status == Status::ok || !(r.kase.has("quant") || r.kase.get_or("mode", "") == "train")) continue;
    (r.status == Status::skipped ? skipped : failed) += 1;
  }
  if (failed + skipped == 0) return "";
  return fmt::format(
      "\nNot in the recipe and training tables: {} case{} with a recipe or mode=train that did not "
      "finish ({} failed, crashed or timed out, {} skipped); the results table above gives each one's reason.\n",
      failed + skipped, failed + skipped == 1 ? "" : "s", failed, skipped);
}

}  // namespace

std::string cases_table(const std::vector<Result>& results, const std::vector<std::string>& runs) {
  auto cols = columns(results);
  std::vector<std::string> headers, rules;
  if (!runs.empty()) {
    headers.push_back("run");
    rules.push_back("---");
  }
  for (auto& c : cols) {
    headers.push_back(c.header);
    rules.push_back(c.numeric ? "---:" : "---");
  }
  std::string out = fmt::format("| {} |\n|{}|\n", fmt::join(headers, " | "), fmt::join(rules, "|"));
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::vector<std::string> cells;
    if (!runs.empty()) cells.push_back(markdown_cell(runs.at(i)));
    for (auto& c : cols) cells.push_back(markdown_cell(c.cell(r)));
    out += fmt::format("| {} |\n", fmt::join(cells, " | "));
  }
  return out;
}

std::string derived_tables(const std::vector<Result>& results) {
  FusionThresholds t;
  return fusion_markdown(fusion_rows(results, t), t) + quant_markdown(quant_rows(results)) +
         training_markdown(training_rows(results)) + unfinished_recipes_note(results);
}

std::string markdown_table(const std::vector<Result>& results) {
  return cases_table(results) + derived_tables(results);
}

std::unique_ptr<Reporter> make_markdown_reporter(std::FILE* out) { return std::make_unique<MarkdownReporter>(out); }

}  // namespace opmeter
