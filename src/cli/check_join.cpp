// Joining the check.json of every rank of a sharded `opmeter check` (check_join.hpp).
#include "cli/check_join.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/check_report.hpp"
#include "opmeter/errors.hpp"
#include "scale/merge.hpp"
#include "util/dir_walk.hpp"
#include "util/output_file.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace fs = std::filesystem;

namespace {

// A string member of `j`: `fallback` when absent, UsageError naming the file and key when another type.
std::string text_of(const nlohmann::json& j, const char* key, const std::string& source, const std::string& where,
                    const std::string& fallback = "") {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_string())
    throw UsageError(fmt::format("{}: {}\"{}\" is {}; expected a string", source, where, key, j[key].dump()));
  return j[key].get<std::string>();
}

}  // namespace

std::vector<Result> check_results_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() || j["schema"] != "opmeter-check/1" ||
      !j.contains("cases"))
    throw UsageError(fmt::format("{}: not a check.json of opmeter check (schema opmeter-check/1)", source));
  if (!j["cases"].is_array())
    throw UsageError(fmt::format("{}: \"cases\" is {}; expected a list of checked cases", source, j["cases"].dump()));
  for (const char* key : {"settings", "context"})
    if (j.contains(key) && !j[key].is_object())
      throw UsageError(fmt::format("{}: \"{}\" is {}; expected an object", source, key, j[key].dump()));
  std::vector<Result> out;
  for (auto& c : j.at("cases")) {
    if (!c.is_object())
      throw UsageError(fmt::format("{}: a case is {}; expected an object with case and status", source, c.dump()));
    Result r;
    const std::string written = text_of(c, "case", source, "a case's ");  // messages quote the file
    try {
      r.kase = parse_case(written);
      r.case_string = r.kase.to_string();  // the op's parameter order, as planned cases have it
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: case '{}': {}", source, written, e.what()));
    }
    const std::string verdict = text_of(c, "status", source, fmt::format("case '{}': ", written));
    if (verdict == "pass" || verdict == "unchecked") r.status = Status::ok;
    else if (verdict == "fail") r.status = Status::failed;
    else if (auto s = parse_status(verdict)) r.status = *s;
    else throw UsageError(fmt::format("{}: case '{}' has status '{}'", source, written, verdict));
    if (verdict == "unchecked") r.add_flag("unchecked");
    if (c.contains("max_error") && c["max_error"].is_number()) r.max_error = c["max_error"].get<double>();
    if (c.contains("tolerance") && c["tolerance"].is_number()) r.tolerance = c["tolerance"].get<double>();
    r.reason = text_of(c, "reason", source, fmt::format("case '{}': ", written));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> check_files_in(const std::string& root) {
  std::error_code ec;
  if (fs::is_regular_file(fs::path(root) / "check.json", ec)) return {(fs::path(root) / "check.json").string()};
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(root, ec))
    if (is_directory_entry(e) && fs::is_regular_file(e.path() / "check.json", ec))
      out.push_back((e.path() / "check.json").string());
  std::sort(out.begin(), out.end());
  return out;
}

void refuse_a_used_output(const std::string& out) {
  std::error_code ec;
  const auto type = fs::symlink_status(out, ec).type();
  if (type == fs::file_type::not_found) return;
  if (type != fs::file_type::directory)
    throw UsageError(
        fmt::format("-o {}: exists and is not a directory; merge writes a new directory: give another -o", out));
  if (!fs::is_empty(out, ec))
    throw UsageError(
        fmt::format("-o {}: exists and is not empty; merge writes a new directory and replaces nothing "
                    "in another: give another -o (or remove {} first)",
                    out, out));
}

namespace {

// One check.json as a run merge compares: its settings, context and cases, named by its directory.
scale::RankRun load_check(const std::string& file) {
  std::ifstream f(file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("{}: not JSON ({})", file, e.what()));
  }
  scale::RankRun r;
  r.results = check_results_from_json(j, file);
  r.dir = fs::path(file).parent_path().string();
  r.name = fs::path(file).parent_path().filename().string();
  r.run = j.value("settings", nlohmann::json::object());
  r.context = j.value("context", nlohmann::json::object());
  scale::check_rank_types(r, {file, "settings"}, {file, "context"});
  return r;
}

}  // namespace

int join_checks(const std::vector<std::string>& inputs, const std::string& out, bool force) {
  std::vector<scale::RankRun> checks;
  for (auto& input : inputs)
    for (auto& file : check_files_in(input)) checks.push_back(load_check(file));
  if (checks.empty()) throw UsageError(fmt::format("no check.json in {}", fmt::join(inputs, ", ")));
  scale::name_machines(checks);  // two hosts' checks/ stay two
  // As merge of results: one check's files, each rank once and whole (a file given twice, through
  // a link too, would count its cases twice).
  auto conflicts = scale::merge_conflicts(checks);
  for (auto& c : conflicts) fmt::print(stderr, "opmeter: {}: {}\n", force ? "warning" : "error", c);
  if (!conflicts.empty() && !force)
    throw UsageError(
        fmt::format("{} of the {} check.json files do not belong with the first ({}); give --force to "
                    "join them anyway",
                    conflicts.size(), checks.size(), checks.front().dir + "/check.json"));
  std::vector<Result> results;
  nlohmann::json ranks = nlohmann::json::array(), machines = nlohmann::json::array();
  for (auto& c : checks) {
    for (auto& r : c.results) {
      machines.push_back(c.name);
      results.push_back(r);
    }
    ranks.push_back({{"name", c.name}, {"settings", c.run}, {"context", c.context}});
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (!fs::is_directory(out, ec)) throw UsageError(fmt::format("-o {}: cannot create the directory", out));
  auto settings = checks.front().run;
  if (settings.is_object()) settings.erase("shard");
  auto context = checks.front().context;
  context["fleet"] = ranks;  // every rank's settings and machine, as merge's run.json keeps them
  auto joined = check_json(results, settings, context);
  for (std::size_t i = 0; i < results.size(); ++i) joined["cases"][i]["machine"] = machines[i];
  const auto file = (fs::path(out) / "check.json").string();
  const std::string text = check_text(results);
  fmt::print("{}", text);
  std::fflush(stdout);
  write_atomically(file, dump_json(joined, 1) + "\n");
  fmt::print(stderr, "opmeter: {} from {} check.json files -> {}\n", count_of(results.size(), "case"), checks.size(),
             file);
  return check_exit_code(results);
}

}  // namespace opmeter
