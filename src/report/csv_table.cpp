// results.csv: one tidy row per case, a column per field the field table puts in the CSV, then
// one per metric.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/reporter_registry.hpp"
#include "report/reporters.hpp"
#include "opmeter/result_fields.hpp"

#include "util/text.hpp"

namespace opmeter {
namespace {

std::string num(double v) { return fmt::format("{:.6g}", v); }

std::string cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  if (v.is_number_float()) return num(v.get<double>());
  if (v.is_number()) return v.dump();
  if (v.is_array()) {  // a list of words (flags): one cell, `;` between them
    std::vector<std::string> words;
    for (auto& e : v) words.push_back(e.is_string() ? e.get<std::string>() : e.dump());
    return csv_field(fmt::format("{}", fmt::join(words, ";")));
  }
  return csv_field(v.dump());
}

ReporterRegistrar csv_reporter({
    .name = "csv",
    .summary = "results.csv: one row per case, medians and rates, for spreadsheets",
    .files = {"results.csv"},
    .order = 1,
    .make = [](const std::string& dir) { return make_end_file_reporter(dir, "results.csv", csv_table); },
});

}  // namespace

std::string csv_table(const nlohmann::json& context, const std::vector<Result>& results) {
  auto metrics = metric_names(results);
  std::vector<const ResultField*> fields;
  for (auto& f : result_fields())
    if ((f.outputs & kInCsv) &&
        (!f.csv_if_any || std::any_of(results.begin(), results.end(), [&](const Result& r) { return !f.value(r).is_null(); })))
      fields.push_back(&f);
  std::vector<std::string> header;
  for (auto* f : fields) header.push_back(f->key(kInCsv));
  for (auto& m : metrics) header.push_back(csv_field(m));
  std::string out = fmt::format("{}\n", fmt::join(header, ","));
  for (auto& r : results) {
    std::vector<std::string> row;
    for (auto* f : fields) row.push_back(cell(f->csv_value ? f->csv_value(r, context) : f->value(r)));
    for (auto& m : metrics) {
      auto it = r.metrics.find(m);
      row.push_back(it == r.metrics.end() ? std::string() : num(it->second.value));
    }
    out += fmt::format("{}\n", fmt::join(row, ","));
  }
  return out;
}

}  // namespace opmeter
