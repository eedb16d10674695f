#pragma once
// The fields of a result, in one table that every output is written from: the journal record
// (to_json), results.json (Google Benchmark's layout), results.csv and the markdown table. A new
// fixed field is one entry here; a measurement without a field of its own goes into
// Result::metrics instead and appears in every output by itself.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

// The outputs a field appears in (a bit set).
enum FieldOutput : unsigned {
  kInJournal = 1,  // results.jsonl, one record per case (to_json)
  kInGbench = 2,   // results.json, one benchmark entry per case
  kInCsv = 4,      // results.csv, one column
};

struct ResultField {
  std::string name;         // its key in the journal record, and elsewhere unless renamed below
  unsigned outputs = 0;     // FieldOutput bits
  std::string gbench_name;  // its key in results.json when that differs from `name`
  std::string csv_name;     // its column in results.csv when that differs from `name`
  std::string unit;         // of the value as written: "s", "GFLOP/s", "%", "" for none
  Better better = Better::neither;
  // The value as JSON writes it; null leaves the key out (and the CSV cell empty).
  std::function<nlohmann::json(const Result&)> value;
  // The CSV cell's value when it differs from `value` (text where JSON has an object, or what
  // only the machine context knows, such as the device's name).
  std::function<nlohmann::json(const Result&, const nlohmann::json& context)> csv_value;
  // Reads a present, non-null value back from a journal record or a results.json entry.
  std::function<void(Result&, const nlohmann::json&)> read;
  // The markdown table's column: header and cell; no header: not in the table.
  std::string markdown;
  std::function<std::string(const Result&)> cell;
  bool numeric = false;          // right-aligned
  bool markdown_if_any = false;  // a column only when some result has a value for it
  bool csv_if_any = false;       // likewise in results.csv (a run's CSV keeps its columns)

  const std::string& key(FieldOutput output) const;  // the field's name in that output
};

// Every field, in results.csv's column order (fields that are not in the CSV are among them).
const std::vector<ResultField>& result_fields();
const ResultField& result_field(const std::string& name);  // throws std::out_of_range

// The markdown table's columns, by field name, in order.
const std::vector<std::string>& markdown_columns();

// Whether `name` may name a metric: letters, digits, '_', '.', '-', and no field or key of the
// Google Benchmark entry (metrics are written beside them there, as counters).
bool is_valid_metric_name(const std::string& name);

// A metric as its outputs show it: JSON with its hints, a markdown cell by its format hint.
nlohmann::json metric_json(const Metric& m);
Metric metric_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception when malformed
std::string format_metric(const Metric& m);
std::string metric_header(const std::string& name, const Metric& m);  // "clock (MHz)"

// The union of the metric names of `results`, sorted: the extra CSV and markdown columns.
std::vector<std::string> metric_names(const std::vector<Result>& results);

}  // namespace opmeter
