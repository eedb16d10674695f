// The stopping settings, mapped once. Each entry names a setting in a config's `stopping:` map, on
// the command line and in the stored run settings, and says which member of Stopping it sets and
// which values are valid. The config reader, the `run` options, the run settings and an isolated
// child's arguments all walk this table, so a new stopping setting is one entry here.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/engine.hpp"

namespace opmeter {

struct StoppingSetting {
  struct Range {
    double lo, hi;  // inclusive, in the units a user writes
  };
  const char* config_key;  // in a config's `stopping:` map, e.g. max_noise
  const char* flag;        // on the command line, e.g. --max-noise
  const char* json_key;    // in the run settings' "stopping", e.g. max_noise_pct
  std::variant<double Stopping::*, std::size_t Stopping::*> member;
  double unit;         // a user writes member x unit (a fraction is written in percent: 100)
  bool zero_is_unset;  // 0 is the default "not given": it is neither passed on nor restored
  Range config_range;  // the config and the command line have always accepted different ranges
  Range flag_range;
  const char* config_note;  // after the key in config messages, e.g. " (percent)"
  const char* help;         // the flag's help text

  bool is_integer() const { return std::holds_alternative<std::size_t Stopping::*>(member); }
  double get(const Stopping& s) const;        // as a user writes it
  void set(Stopping& s, double value) const;  // from a value as a user writes it
  std::string arg(const Stopping& s) const;   // as a command-line value
};

const std::vector<StoppingSetting>& stopping_settings();
std::vector<std::string> stopping_config_keys();

// Stopping values given on the command line or restored from a stored run, as a user writes them,
// by config key.
using StoppingOverrides = std::map<std::string, double>;

Stopping apply_overrides(Stopping s, const StoppingOverrides& given);
// The flags and values that make a child process's Stopping equal to s.
std::vector<std::string> stopping_args(const Stopping& s);
// The run settings' "stopping" object.
nlohmann::json stopping_json(const Stopping& s);
// Adds the settings a stored run's "stopping" object holds to `given`, unless given already.
void restore_stopping(StoppingOverrides& given, const nlohmann::json& stored);

}  // namespace opmeter
