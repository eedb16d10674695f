// Reading results files back, and telling the user what a file is when it is not one.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "engine/runner.hpp"
#include "opmeter/errors.hpp"
#include "results/result_set.hpp"
#include "results/run_dir.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace fs = std::filesystem;
namespace {

constexpr const char* kCsvHeaderStart = "timestamp,device,op,backend,";

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw UsageError(fmt::format("{}: is a directory, not a results file", path));
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw UsageError(fmt::format("{}: cannot open the file", path));
  std::string text(static_cast<std::size_t>(f.tellg()), '\0');
  f.seekg(0);
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

bool is_opmeter_entry(const nlohmann::json& e) {
  return e.is_object() && e.contains("name") && e.contains("op") && e.contains("impl") && e.contains("status");
}

ResultsFormat classify_json(const nlohmann::json& j) {
  if (!j.is_object()) return ResultsFormat::other_json;
  if (j.value("schema", "") == kCalibrationSchema) return ResultsFormat::calibration;
  if (j.contains("benchmarks") && j["benchmarks"].is_array()) {
    for (auto& e : j["benchmarks"])
      if (e.value("run_type", "iteration") == "iteration" && !is_opmeter_entry(e)) return ResultsFormat::foreign_gbench;
    return ResultsFormat::results_json;
  }
  if (j.contains("case") && j.contains("status")) return ResultsFormat::results_jsonl;  // one journal line
  return ResultsFormat::other_json;
}

ResultsFormat classify(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded()) return classify_json(j);
  if (text.rfind(kCsvHeaderStart, 0) == 0) return ResultsFormat::results_csv;
  auto first = nlohmann::json::parse(text.substr(0, text.find('\n')), nullptr, false);
  if (!first.is_discarded() && classify_json(first) == ResultsFormat::results_jsonl) return ResultsFormat::results_jsonl;
  return ResultsFormat::unknown;
}

// `root`: the document, where it parsed as one (another opmeter file is named by its schema).
std::string why_not(const std::string& path, ResultsFormat f, const nlohmann::json& root = nullptr) {
  switch (f) {
    case ResultsFormat::results_csv:
      return fmt::format("{}: is opmeter's CSV summary, which holds medians only; give the results directory, "
                         "its results.json or its results.jsonl",
                         path);
    case ResultsFormat::calibration:
      return fmt::format("{}: is a calibration profile (opmeter calibrate), not results", path);
    case ResultsFormat::foreign_gbench:
      return fmt::format("{}: is Google Benchmark JSON from another program (entries without opmeter's op, impl "
                         "and status)",
                         path);
    case ResultsFormat::other_json:
      if (const auto schema = root.is_object() && root.contains("schema") && root["schema"].is_string()
                                  ? root["schema"].get<std::string>()
                                  : std::string();
          schema.rfind("opmeter-", 0) == 0)  // a predict model, fleet.json, check.json, a comparison
        return fmt::format("{}: is an opmeter file of another kind ({}), not results; give a results directory, its "
                           "results.json or its results.jsonl", path, schema);
      if (root.is_object() && root.contains("status") && !root.contains("case"))  // one journal record
        return fmt::format("{}: is a journal record without 'case' (a record has 'case' and 'status')", path);
      return fmt::format("{}: is JSON but not opmeter results (no 'benchmarks' list)", path);
    default:
      return fmt::format("{}: is not an opmeter results file (expected results.json or results.jsonl)", path);
  }
}

// What an unreadable file is, where its bytes say: compressed, or JSON cut short or damaged.
std::string why_unreadable(const std::string& path, const std::string& text) {
  const bool xz = text.starts_with("\xFD\x37\x7A\x58\x5A"), gzip = text.starts_with("\x1F\x8B");  // magic bytes
  if (xz || gzip)
    return fmt::format("{}: is {}-compressed: decompress it first ({} -dk {})", path, xz ? "xz" : "gzip",
                       xz ? "xz" : "gzip", path);
  const auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || (text[start] != '{' && text[start] != '['))
    return why_not(path, ResultsFormat::unknown);
  const std::string first = text.substr(0, text.find('\n'));
  if (!nlohmann::json::parse(first, nullptr, false).is_discarded())  // a journal whose lines are not opmeter's records
    return fmt::format("{}: line 1 is JSON but not a record of an opmeter journal (a record has 'case' and 'status')",
                       path);
  try {
    const nlohmann::json whole = nlohmann::json::parse(text);  // throws where it stops
    (void)whole;
  } catch (const nlohmann::json::parse_error& e) {
    return fmt::format("{}: invalid JSON at byte {} (truncated or damaged?)", path, e.byte);
  }
  return why_not(path, ResultsFormat::unknown);
}

// Reads results.json without holding its whole document: a SAX handler builds the document but
// for the `benchmarks` entries, each of which is turned into a Result as soon as it closes and then
// dropped. A 10,000-case file is read in a fraction of the time and memory of a full parse.
class ResultsJsonReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit ResultsJsonReader(std::string path) : path_(std::move(path)) {}
  nlohmann::json root;                // everything but the benchmark entries
  std::vector<Result> results;
  bool saw_benchmarks = false, foreign = false;
  std::string error;

  bool null() override { return add(nullptr); }
  bool boolean(bool v) override { return add(v); }
  bool number_integer(number_integer_t v) override { return add(v); }
  bool number_unsigned(number_unsigned_t v) override { return add(v); }
  bool number_float(number_float_t v, const string_t&) override { return add(v); }
  bool string(string_t& v) override { return add(std::move(v)); }
  bool binary(binary_t& v) override { return add(std::move(v)); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool start_array(std::size_t) override {
    bool is_benchmarks = stack_.size() == 1 && stack_[0]->is_object() && key_ == "benchmarks";
    open(nlohmann::json::array());
    if (is_benchmarks) {
      benchmarks_ = stack_.back();
      saw_benchmarks = true;
    }
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool end_object() override {
    nlohmann::json* done = stack_.back();
    stack_.pop_back();
    if (!stack_.empty() && stack_.back() == benchmarks_) {
      take_entry(*done);
      benchmarks_->erase(benchmarks_->size() - 1);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = e.what();
    return false;
  }

 private:
  bool add(nlohmann::json v) {
    place(std::move(v));
    return true;
  }
  bool open(nlohmann::json v) {
    stack_.push_back(place(std::move(v)));
    return true;
  }
  nlohmann::json* place(nlohmann::json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    nlohmann::json* top = stack_.back();
    if (top == benchmarks_ && ++entries_ && !v.is_object())  // a benchmark is an object: anything else is another file
      throw UsageError(fmt::format("{}: benchmark {} is {}, not an object: not opmeter results", path_, entries_,
                                   v.is_null() ? "null" : v.type_name()));
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    auto& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }
  void take_entry(const nlohmann::json& e) {
    if (foreign || e.value("run_type", "iteration") != "iteration") return;  // aggregates repeat it
    if (!is_opmeter_entry(e)) {
      foreign = true;
      return;
    }
    try {
      results.push_back(result_from_gbench(e));
    } catch (const UsageError& err) {
      throw UsageError(fmt::format("{}: benchmark {}: {}", path_, results.size() + 1, err.what()));
    }
  }

  std::string path_;
  std::vector<nlohmann::json*> stack_;  // open containers, innermost last
  nlohmann::json* benchmarks_ = nullptr;
  std::size_t entries_ = 0;  // of benchmarks, counted from 1
  std::string key_;
};

void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && std::all_of(j.begin(), j.end(), [](auto& e) { return e.is_primitive(); })) {
    std::string s;
    for (auto& e : j) s += (s.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
    out[prefix] = s;
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) flatten(j[i], fmt::format("{}[{}]", prefix, i), out);
  } else {
    out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
  }
}

}  // namespace

std::map<std::string, std::string> flatten_json(const nlohmann::json& j) {
  std::map<std::string, std::string> out;
  flatten(j, "", out);
  return out;
}

std::string describe(ResultsFormat f) {
  switch (f) {
    case ResultsFormat::results_json: return "opmeter results (results.json)";
    case ResultsFormat::results_jsonl: return "opmeter results (results.jsonl)";
    case ResultsFormat::results_csv: return "opmeter's CSV summary";
    case ResultsFormat::calibration: return "an opmeter calibration profile";
    case ResultsFormat::foreign_gbench: return "Google Benchmark JSON from another program";
    case ResultsFormat::other_json: return "JSON of another kind";
    case ResultsFormat::unknown: return "not a results file";
  }
  return "?";
}

ResultsFormat detect_results_format(const std::string& path) { return classify(read_file(path)); }

namespace {

ResultSet load_file(const std::string& path) {
  std::string text = read_file(path);
  ResultsJsonReader reader(path);
  ResultsFormat format;
  if (!nlohmann::json::sax_parse(text, &reader)) {
    format = classify(text);  // not one JSON document: a journal, a CSV or something else
  } else if (reader.saw_benchmarks && reader.root.value("schema", "") != kCalibrationSchema) {
    if (!reader.foreign)
      return ResultSet{path, ResultsFormat::results_json, reader.root.value("context", nlohmann::json::object()),
                       std::move(reader.results)};
    format = ResultsFormat::foreign_gbench;
  } else {
    format = classify_json(reader.root);
  }
  if (format == ResultsFormat::results_jsonl) return ResultSet{path, format, nlohmann::json::object(), read_jsonl(path)};
  if (format == ResultsFormat::unknown) throw UsageError(why_unreadable(path, text));
  throw UsageError(why_not(path, format, reader.root));
}

// The machine context a run wrote at its start (run.json), for a journal read on its own.
nlohmann::json stored_context(const fs::path& dir) {
  std::ifstream f(dir / kRunFile);
  auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("context")) return nlohmann::json::object();
  auto context = j["context"];
  if (j.contains("run")) context["run"] = j["run"];
  return context;
}

// results.json is written at the end of a run, the journal as each case finishes: when the run was
// stopped, or results.json was cut short, the journal holds more. Then the journal is the record.
ResultSet with_journal_fallback(const std::string& json_path, const fs::path& journal) {
  std::optional<ResultSet> set;
  std::string problem;
  try {
    set = load_file(json_path);
  } catch (const UsageError& e) {
    problem = fmt::format("{} cannot be read ({})", json_path, e.what());
  }
  std::error_code ec;
  if (set && (set->format != ResultsFormat::results_json || !fs::exists(journal, ec))) return *set;
  if (!set && !fs::exists(journal, ec)) throw UsageError(problem);
  std::vector<Result> logged;
  try {
    logged = read_jsonl(journal.string());
  } catch (const UsageError&) {
    if (set) return *set;
    throw UsageError(problem);
  }
  if (set) {
    std::set<std::string> have;
    for (auto& r : set->results) have.insert(r.case_string);
    auto missing = std::count_if(logged.begin(), logged.end(), [&](const Result& r) { return !have.count(r.case_string); });
    if (missing == 0) return *set;
    problem = fmt::format("{} is stale: {} of the journal's {} cases are not in it", json_path, missing, logged.size());
  }
  ResultSet out{journal.string(), ResultsFormat::results_jsonl,
                set ? set->context : stored_context(journal.parent_path()), std::move(logged)};
  out.notes.push_back(fmt::format("{}; reading the journal {} instead ({})", problem, journal.string(),
                                  count_of(out.results.size(), "case")));
  return out;
}

bool is_results_file_name(const fs::path& p) { return p.filename() == "results.json" || p.filename() == "results.jsonl"; }

}  // namespace

std::string results_identity(const std::string& path) {
  std::error_code ec;
  auto p = fs::absolute(path, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "dir/"
  if (auto c = fs::weakly_canonical(p, ec); !ec) p = c;
  if (!fs::is_directory(p, ec) && is_results_file_name(p)) p = p.parent_path();
  return p.string();
}

ResultSet load_results(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError(fmt::format("{}: no such file or directory", path));
  if (fs::is_directory(path, ec)) {
    auto json = fs::path(path) / "results.json", journal = fs::path(path) / "results.jsonl";
    ResultSet set;
    if (fs::exists(json, ec)) set = with_journal_fallback(json.string(), journal);
    else if (fs::exists(journal, ec)) {
      bool torn = false;
      set = ResultSet{path, ResultsFormat::results_jsonl, stored_context(path), read_jsonl(journal.string(), torn)};
      // No results.json where the run would have written one: it stopped before its end (or is
      // running); the journal is the record. A run with --format but json writes none.
      std::string file;
      auto run = stored_run_settings(path, &file).value_or(nlohmann::json::object());
      if (run.contains("formats") && !run["formats"].is_string())  // value() would throw json's type_error
        throw UsageError(fmt::format("{}: \"{}formats\" is {}; expected a string (fix or remove it)", file,
                                     file.ends_with("results.json") ? "context.run." : "run.", run["formats"].dump()));
      const std::string formats = run.value("formats", std::string());
      const bool expected = formats.empty() || formats.find("json") != std::string::npos || formats.find("gbench") != std::string::npos;
      if (expected || torn)
        set.notes.push_back(fmt::format("{}: {}reading the journal ({}{})", path,
                                        expected ? "no results.json (a run stopped before its end?); " : "",
                                        count_of(set.results.size(), "case"),
                                        torn ? "; its last line, cut short by the stop, left out" : ""));
    }
    else throw UsageError(fmt::format("{}: a directory without results.json or results.jsonl", path));
    set.source = path;
    return set;
  }
  if (fs::path(path).filename() == "results.json")
    return with_journal_fallback(path, fs::path(path).parent_path() / "results.jsonl");
  ResultSet set = load_file(path);
  // A journal named on its own has its run's machine context beside it, as its folder would.
  if (set.format == ResultsFormat::results_jsonl && set.context.empty())
    set.context = stored_context(fs::path(path).parent_path());
  return set;
}

}  // namespace opmeter
