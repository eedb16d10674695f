// Continuing an earlier `opmeter check` from its check.json (check_resume.hpp).
#include "cli/check_resume.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli/check_join.hpp"
#include "cli/commands.hpp"
#include "cli/validators.hpp"
#include "opmeter/errors.hpp"

namespace opmeter {
namespace fs = std::filesystem;
namespace {

// `j[key]`, a string in a stored check.json at `where` (context.cpu.model): "" when absent or
// null; another type is bad input naming the file and the key (json's value() threw type_error).
std::string stored_text(const nlohmann::json& j, const char* key, const std::string& file, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string())
    throw UsageError(fmt::format("{}: \"{}\" is {}; expected a string", file, where, j[key].dump()));
  return j[key].get<std::string>();
}

// `j[key]`, an object (or, with `list`, a list): empty when absent or null, UsageError when another type.
nlohmann::json stored_part(const nlohmann::json& j, const char* key, const std::string& file, const std::string& where,
                           bool list = false) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null())
    return list ? nlohmann::json::array() : nlohmann::json::object();
  if (list ? !j[key].is_array() : !j[key].is_object())
    throw UsageError(
        fmt::format("{}: \"{}\" is {}; expected {}", file, where, j[key].dump(), list ? "a list" : "an object"));
  return j[key];
}

// The model of `device` a check's context names (a GPU's name, the CPU's model); empty if none.
// `file` names the context in messages.
std::string device_model(const nlohmann::json& context, const std::string& device, const std::string& file) {
  if (device == "cpu")
    return stored_text(stored_part(context, "cpu", file, "context.cpu"), "model", file, "context.cpu.model");
  for (auto& g : stored_part(context, "gpus", file, "context.gpus", true)) {
    if (!g.is_object())
      throw UsageError(fmt::format("{}: a GPU of \"context.gpus\" is {}; expected an object", file, g.dump()));
    if (stored_text(g, "device", file, "context.gpus[].device") == device)
      return stored_text(g, "name", file, "context.gpus[].name");
  }
  return "";
}

// The git commit opmeter was built from, as the context records it; empty if none.
std::string build_of(const nlohmann::json& context, const std::string& file) {
  return stored_text(stored_part(context, "opmeter", file, "context.opmeter"), "git_sha", file,
                     "context.opmeter.git_sha");
}

std::vector<std::string> strings(const nlohmann::json& settings, const char* key) {
  auto v = settings.value(key, nlohmann::json::array());
  std::vector<std::string> out;
  if (v.is_array())
    for (auto& s : v)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

// A stored setting that is a string: "" when absent, UsageError naming the file when another type.
std::string text(const StoredCheck& stored, const char* key) {
  if (!stored.settings.contains(key) || stored.settings[key].is_null()) return "";
  if (!stored.settings[key].is_string())
    throw UsageError(
        fmt::format("{}: \"settings.{}\" is {}; expected a string", stored.file, key, stored.settings[key].dump()));
  return stored.settings[key].get<std::string>();
}

bool boolean(const StoredCheck& stored, const char* key) {
  if (!stored.settings.contains(key) || stored.settings[key].is_null()) return false;
  if (!stored.settings[key].is_boolean())
    throw UsageError(fmt::format("{}: \"settings.{}\" is {}; expected true or false", stored.file, key,
                                 stored.settings[key].dump()));
  return stored.settings[key].get<bool>();
}

}  // namespace

StoredCheck read_stored_check(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError(fmt::format("--resume {}: no such directory", dir));
  StoredCheck s;
  s.file = (fs::path(dir) / "check.json").string();
  if (!fs::is_regular_file(s.file, ec))
    throw UsageError(fmt::format("--resume {}: no check.json there (opmeter check -o {} writes one)", dir, dir));
  nlohmann::json j;
  try {
    std::ifstream f(s.file);
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("--resume {}: {} is not JSON ({})", dir, s.file, e.what()));
  }
  s.results = check_results_from_json(j, s.file);
  s.settings = j.value("settings", nlohmann::json::object());
  s.context = j.value("context", nlohmann::json::object());
  if (!s.settings.is_object() || !s.settings.contains("device") || !s.settings["device"].is_string())
    throw UsageError(fmt::format("--resume {}: {} names no device in its settings", dir, s.file));
  return s;
}

void take_stored_selection(CheckArgs& a, const StoredCheck& stored) {
  const auto device = stored.settings["device"].get<std::string>();
  if (!a.device.empty() && a.device != device)
    throw UsageError(fmt::format("--resume {}: its cases were checked on {}, not --device {}; check {} into another "
                                 "directory (-o)",
                                 a.resume, device, a.device, a.device));
  a.device = device;
  if (a.filter.empty() && a.exclude.empty()) {  // the filter and exclusion go together
    a.filter = text(stored, "filter");
    a.exclude = text(stored, "exclude");
    try {  // one stored by an older opmeter may hold a lookaround
      compile_filter(a.filter, a.exclude);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--resume {}: {} stores {}; give them as flags with --resume (flags given now win)",
                                   a.resume, stored.file, e.what()));
    }
  }
  if (a.ops.empty()) a.ops = strings(stored.settings, "ops");
  if (a.impls.empty()) a.impls = strings(stored.settings, "impls");
  if (a.dtypes.empty()) a.dtypes = strings(stored.settings, "dtypes");
  take_stored_code(a.resume, a.dry_run, strings(stored.settings, "plugins"), strings(stored.settings, "kernels"), a.plugins,
                   a.kernels);
  a.quick = a.quick || boolean(stored, "quick");
  a.isolate = a.isolate || boolean(stored, "isolate");
  if (!a.case_deadline_s && stored.settings.contains("case_deadline_s") &&
      !stored.settings["case_deadline_s"].is_null()) {
    const auto& v = stored.settings["case_deadline_s"];
    if (!v.is_number() || v.get<double>() < kMinCaseDeadline || v.get<double>() > kMaxCaseDeadline)
      throw UsageError(
          fmt::format("{}: \"settings.case_deadline_s\" is {}; expected a number from {} to {}, as "
                      "--case-deadline takes",
                      stored.file, v.dump(), kMinCaseDeadline, kMaxCaseDeadline));
    a.case_deadline_s = v.get<double>();
  }
}

void refuse_other_machine_or_build(const StoredCheck& stored, const nlohmann::json& context, const std::string& device) {
  const std::string dir = fs::path(stored.file).parent_path().string();
  const std::string was = device_model(stored.context, device, stored.file),
                    is = device_model(context, device, "this machine's context");
  if (!was.empty() && !is.empty() && was != is)
    throw UsageError(fmt::format("--resume {}: its cases were checked on {} ({}), this {} is {}; one check.json "
                                 "describes one machine: check into another directory (-o)",
                                 dir, was, device, device, is));
  const std::string built = build_of(stored.context, stored.file), now = build_of(context, "this machine's context");
  if (!built.empty() && !now.empty() && built != now)
    throw UsageError(fmt::format("--resume {}: its cases were checked by opmeter {}, this is opmeter {}; their verdicts "
                                 "need not hold for this build: check into another directory (-o)",
                                 dir, built, now));
}

}  // namespace opmeter
