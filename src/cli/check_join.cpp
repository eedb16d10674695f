// Joining the check.json of every rank of a sharded `opmeter check` (check_join.hpp).
#include "cli/check_join.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli/check_report.hpp"
#include "opmeter/errors.hpp"
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

int join_checks(const std::vector<std::string>& inputs, const std::string& out) {
  std::vector<Result> results;
  nlohmann::json ranks = nlohmann::json::array(), machines = nlohmann::json::array();
  nlohmann::json first;
  for (auto& input : inputs)
    for (auto& file : check_files_in(input)) {
      std::ifstream f(file);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(f);
      } catch (const nlohmann::json::exception& e) {
        throw UsageError(fmt::format("{}: not JSON ({})", file, e.what()));
      }
      const std::string name = fs::path(file).parent_path().filename().string();
      for (auto& r : check_results_from_json(j, file)) {
        machines.push_back(name);
        results.push_back(std::move(r));
      }
      ranks.push_back({{"name", name},
                       {"settings", j.value("settings", nlohmann::json())},
                       {"context", j.value("context", nlohmann::json())}});
      if (first.is_null()) first = j;
    }
  if (results.empty() && ranks.empty()) throw UsageError(fmt::format("no check.json in {}", fmt::join(inputs, ", ")));
  std::error_code ec;
  fs::create_directories(out, ec);
  if (!fs::is_directory(out, ec)) throw UsageError(fmt::format("-o {}: cannot create the directory", out));
  auto settings = first.value("settings", nlohmann::json::object());
  if (settings.is_object()) settings.erase("shard");
  auto context = first.value("context", nlohmann::json::object());
  context["fleet"] = ranks;  // every rank's settings and machine, as merge's run.json keeps them
  auto joined = check_json(results, settings, context);
  for (std::size_t i = 0; i < results.size(); ++i) joined["cases"][i]["machine"] = machines[i];
  const auto file = (fs::path(out) / "check.json").string();
  const std::string text = check_text(results);
  fmt::print("{}", text);
  std::fflush(stdout);
  write_atomically(file, dump_json(joined, 1) + "\n");
  fmt::print(stderr, "opmeter: {} from {} check.json files -> {}\n", count_of(results.size(), "case"), ranks.size(),
             file);
  return check_exit_code(results);
}

}  // namespace opmeter
