#include "engine/run_settings.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "opmeter/backend.hpp"
#include "opmeter/errors.hpp"

namespace opmeter {

const std::vector<RunSetting>& run_setting_table() {
  static const std::vector<RunSetting> table = [] {
    // clang-format off
    std::vector<RunSetting> t = {
        {.key = "energy_window_s", .flag = "--energy-window", .lo = 0, .hi = 600, .member = &RunOptions::energy_window_s,
         .help = "CUDA cases: seconds at steady power over which the sustained time and the energy are measured; CPU cases where RAPL is readable: seconds of back-to-back calls over which the energy is measured (default 1; 0: off)"},
        {.key = "cooldown_s", .flag = "--cooldown", .lo = 0, .hi = 600, .member = &RunOptions::cooldown_s,
         .help = "CUDA cases: seconds the GPU idles before the burst samples (default 0.5)"},
        {.key = "heat_max_s", .flag = "--heat-max", .lo = 0, .hi = 600, .member = &RunOptions::heat_max_s,
         .help = "CUDA cases: at most this many seconds of calls until power settles, before the sustained window (default 5)"},
    };
    // clang-format on
    for (auto* backend : backends())
      for (auto& s : backend->settings())
        if (s.max > 0)  // a flag; max 0: a setting of case strings only
          t.push_back({.key = s.name, .flag = "--" + s.name, .lo = 0, .hi = double(s.max), .integer = true, .help = s.flag_help});
    return t;
  }();
  return table;
}

std::vector<std::string> run_setting_config_keys() {
  std::vector<std::string> keys;
  for (auto& s : run_setting_table())
    if (!s.is_case_setting()) keys.push_back(s.key);
  return keys;
}

RunOptions apply_run_settings(RunOptions o, const RunSettingValues& given) {
  for (auto& s : run_setting_table())
    if (auto it = given.find(s.key); it != given.end() && !s.is_case_setting()) o.*s.member = it->second;
  return o;
}

void apply_case_settings(Case& c, const RunSettingValues& given) {
  for (auto& def : backend_of(c).settings())
    if (auto it = given.find(def.name); it != given.end()) {
      if (it->second > 0) c.set_setting(def.name, fmt::format("{}", it->second));
      else c.drop_setting(def.name);
    }
}

void check_case_settings_used(const RunSettingValues& given, const std::vector<Case>& cases) {
  for (auto* backend : backends())
    for (auto& def : backend->settings()) {
      auto it = given.find(def.name);
      if (def.max <= 0 || it == given.end() || !(it->second > 0)) continue;
      if (std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return &backend_of(c) == backend; })) continue;
      throw UsageError(fmt::format("--{} {}: {} needs {}, and no case of this run is on one (--device {})", def.name,
                                   it->second, def.help, backend->description(), backend->device_grammar()));
    }
}

std::vector<std::string> run_setting_args(const RunOptions& o) {
  std::vector<std::string> args;
  for (auto& s : run_setting_table())
    if (!s.is_case_setting()) args.insert(args.end(), {s.flag, fmt::format("{}", o.*s.member)});
  return args;
}

void add_run_settings_json(nlohmann::json& j, const RunOptions& o, const RunSettingValues& given) {
  for (auto& s : run_setting_table()) {
    if (!s.is_case_setting()) j[s.key] = o.*s.member;
    else if (auto it = given.find(s.key); it != given.end()) j[s.key] = it->second;
  }
}

void restore_run_settings(RunSettingValues& given, const nlohmann::json& stored) {
  if (!stored.is_object()) return;
  for (auto& s : run_setting_table()) {
    auto it = stored.find(s.key);
    if (it != stored.end() && it->is_number() && !given.count(s.key)) given[s.key] = it->get<double>();
  }
}

}  // namespace opmeter
