// The run settings beyond stopping (stopping_settings.hpp), mapped once. Each entry names a
// setting as a config key (also its key in run.json) and a command-line flag, and says where it
// goes: a member of RunOptions, which an isolated child gets as the same flag, or a backend's
// case setting (CUDA's graph=N), which every case string carries. The `run` options, the config
// reader, run.json, `--resume DIR` and an isolated child's arguments all walk this table, so a
// new run setting is one entry here (or one SettingDef of its backend).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/case.hpp"
#include "engine/runner.hpp"

namespace opmeter {

struct RunSetting {
  std::string key;   // config key and run.json key, e.g. energy_window_s
  std::string flag;  // e.g. --energy-window
  double lo = 0, hi = 0;  // the values accepted, inclusive
  bool integer = false;
  double RunOptions::* member = nullptr;  // null: a backend's case setting named `key` (0: off)
  std::string help;  // the flag's help text

  bool is_case_setting() const { return member == nullptr; }
};

// RunOptions' settings, then each backend's case settings.
const std::vector<RunSetting>& run_setting_table();
// The config keys of RunOptions' settings (a backend's case settings are read with its device).
std::vector<std::string> run_setting_config_keys();

// Run settings given on the command line, in a config or restored from a stored run, by key.
using RunSettingValues = std::map<std::string, double>;

RunOptions apply_run_settings(RunOptions o, const RunSettingValues& given);
// Sets the given case settings the case's backend takes on it; 0 drops the setting.
void apply_case_settings(Case& c, const RunSettingValues& given);
// Throws UsageError for a case setting given above 0 (--graph 5) where none of `cases` is on its
// backend: the flag would be dropped in silence, where the config key is refused.
void check_case_settings_used(const RunSettingValues& given, const std::vector<Case>& cases);
// The flags and values that give a child process's RunOptions these settings (the case
// settings travel in the case string).
std::vector<std::string> run_setting_args(const RunOptions& o);
// Adds the settings to run.json's object: RunOptions' as the run uses them, case settings as given.
void add_run_settings_json(nlohmann::json& j, const RunOptions& o, const RunSettingValues& given);
// Adds the settings a stored run.json object holds to `given`, unless given already.
void restore_run_settings(RunSettingValues& given, const nlohmann::json& stored);

}  // namespace opmeter
