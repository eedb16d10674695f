#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "opmeter/reporter.hpp"

namespace opmeter {

// Live progress: a rewritten line per case on a terminal, plain lines otherwise.
std::unique_ptr<Reporter> make_console_reporter(std::FILE* out, bool live);
// Appends each result to `path` as one JSON line the moment it finishes (resume reads it).
std::unique_ptr<Reporter> make_jsonl_reporter(const std::string& path);
// At the end: results.json (Google Benchmark format), results.csv and results.md in `dir`,
// each written to a temporary file and renamed.
std::unique_ptr<Reporter> make_summary_files_reporter(const std::string& dir);
// At the end: report.html and report.md in `dir` (a failure to write them is a warning: the
// results are already saved).
std::unique_ptr<Reporter> make_report_files_reporter(const std::string& dir);
// At the end: the markdown table on `out`.
std::unique_ptr<Reporter> make_markdown_reporter(std::FILE* out);

// The formats themselves, for reporters and tests.
nlohmann::json gbench_json(const nlohmann::json& context, const std::vector<Result>& results);
std::string csv_table(const nlohmann::json& context, const std::vector<Result>& results);
std::string markdown_table(const std::vector<Result>& results);
std::string human_time(double seconds);
// Writes a temporary file beside `path`, syncs it and renames it over `path`: readers see the old
// file or the new one, never half of one. OutputError (naming the path and why) on failure.
void write_atomically(const std::string& path, const std::string& content);
// JSON text that never throws on strings that are not UTF-8 (they show U+FFFD).
std::string dump_json(const nlohmann::json& j, int indent = -1);

// Reads a results.jsonl log; a torn last line (interrupted write) is ignored.
std::vector<Result> read_jsonl(const std::string& path);

}  // namespace opmeter
