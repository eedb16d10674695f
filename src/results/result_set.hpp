#pragma once
// Reading results back: what `report` and `compare` take as input.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

// What a file given as results turned out to be.
enum class ResultsFormat {
  results_json,   // opmeter's results.json (Google Benchmark layout, raw samples)
  results_jsonl,  // opmeter's journal (raw samples, no machine context)
  results_csv,    // opmeter's results.csv (medians only)
  calibration,    // an `opmeter calibrate` profile
  foreign_gbench, // Google Benchmark JSON from another program
  other_json,     // JSON of some other kind
  unknown,        // not JSON, not opmeter CSV
};
std::string describe(ResultsFormat f);  // "opmeter results (results.json)", ...

// Looks at a file's content (not its name). Never throws for content; throws UsageError when it
// cannot be read.
ResultsFormat detect_results_format(const std::string& path);

struct ResultSet {
  std::string source;       // the path given
  ResultsFormat format = ResultsFormat::results_json;
  nlohmann::json context;   // the machine context; an empty object for a journal
  std::vector<Result> results;
  std::vector<std::string> notes;  // what the reader chose, e.g. the journal over a stale results.json
};

// Reads a results directory (its results.json, or results.jsonl when the run did not finish), a
// results.json or a results.jsonl. Anything else is a UsageError that names what the file is.
// A results.json that is truncated, or holds fewer cases than the journal beside it, gives way to
// the journal, with a note saying so.
ResultSet load_results(const std::string& path);

// Reads a results.jsonl log; a torn last line (interrupted write) is ignored.
std::vector<Result> read_jsonl(const std::string& path);
// The same, and whether its last line was cut short (a write a kill interrupted; left out).
std::vector<Result> read_jsonl(const std::string& path, bool& torn);

// One name for one run's results however it is given (a directory, its results.json or
// results.jsonl), to notice the same results given twice.
std::string results_identity(const std::string& path);

// A context (or any JSON) as dotted keys and display strings: {"cpu": {"model": "X"}} gives
// "cpu.model" -> "X"; arrays of plain values are joined with ", ".
std::map<std::string, std::string> flatten_json(const nlohmann::json& j);

}  // namespace opmeter
