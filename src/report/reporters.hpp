#pragma once
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "opmeter/reporter.hpp"
// human_time, write_atomically, dump_json and friends moved to src/util/; included here so that
// files that reach them through this header keep building.
#include "util/human_units.hpp"
#include "util/output_file.hpp"

namespace opmeter {

// Live progress: a rewritten line per case on a terminal, plain lines otherwise.
std::unique_ptr<Reporter> make_console_reporter(std::FILE* out, bool live);
// Appends each result to `path` as one JSON line the moment it finishes (resume reads it).
std::unique_ptr<Reporter> make_jsonl_reporter(const std::string& path);
// The results files (results.json, results.csv, results.md, the report) are made by name: see
// reporter_registry.hpp.
// At the end: report.html and report.md in `dir` (a failure to write them is a warning: the
// results are already saved).
std::unique_ptr<Reporter> make_report_files_reporter(const std::string& dir);
// At the end: the file `name` in `dir` with `content` of the context and all results, written
// to a temporary file and renamed.
using FileContent = std::function<std::string(const nlohmann::json& context, const std::vector<Result>& all)>;
std::unique_ptr<Reporter> make_end_file_reporter(const std::string& dir, const std::string& name, FileContent content);
// At the end: the markdown table on `out`.
std::unique_ptr<Reporter> make_markdown_reporter(std::FILE* out);

// The formats themselves, for reporters and tests.
nlohmann::json gbench_json(const nlohmann::json& context, const std::vector<Result>& results);
std::string csv_table(const nlohmann::json& context, const std::vector<Result>& results);
std::string markdown_table(const std::vector<Result>& results);  // cases_table + derived_tables
// With `runs` (runs[i] names the run results[i] came from, in a report of several): a run column first.
std::string cases_table(const std::vector<Result>& results, const std::vector<std::string>& runs = {});
// The tables that compare results with one another (fusion, quantization, training): each result
// against a baseline of the same run, so a report of several runs makes them one run at a time.
std::string derived_tables(const std::vector<Result>& results);

}  // namespace opmeter
