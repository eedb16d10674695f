#include "engine/stopping_settings.hpp"

#include <fmt/format.h>

namespace opmeter {

const std::vector<StoppingSetting>& stopping_settings() {
  // In the order a config's unknown-key message lists them. One entry per setting, kept compact:
  // clang-format off
  static const std::vector<StoppingSetting> table = {
      {.config_key = "max_noise", .flag = "--max-noise", .json_key = "max_noise_pct", .member = &Stopping::max_noise,
       .unit = 100, .zero_is_unset = false, .config_range = {0.001, 100}, .flag_range = {0.001, 100},
       .config_note = " (percent)", .help = "precision target: the half-width of the median's 95% confidence interval, percent of the median (the ± column; default 0.5)"},
      {.config_key = "min_samples", .flag = "--min-samples", .json_key = "min_samples", .member = &Stopping::min_samples,
       .unit = 1, .zero_is_unset = false, .config_range = {2, 1000000}, .flag_range = {2, 100000000},
       .config_note = "", .help = "samples before the precision target may stop a case (default 10)"},
      {.config_key = "min_time_s", .flag = "--min-time", .json_key = "min_time_s", .member = &Stopping::min_time_s,
       .unit = 1, .zero_is_unset = false, .config_range = {0, 3600}, .flag_range = {0, 86400},
       .config_note = "", .help = "measured seconds before the precision target may stop a case (default 0.5)"},
      {.config_key = "timeout_s", .flag = "--timeout", .json_key = "timeout_s", .member = &Stopping::timeout_s,
       .unit = 1, .zero_is_unset = false, .config_range = {0.001, 86400}, .flag_range = {0.001, 86400},
       .config_note = "", .help = "seconds of sampling per case; a case that has not reached the precision target by then is flagged unconverged (default 15)"},
      {.config_key = "samples", .flag = "--samples", .json_key = "fixed_samples", .member = &Stopping::fixed_samples,
       .unit = 1, .zero_is_unset = true, .config_range = {1, 100000000}, .flag_range = {1, 100000000},
       .config_note = "", .help = "exactly N samples per case instead of the precision target (N >= 1)"},
      {.config_key = "warmup", .flag = "--warmup", .json_key = "warmup_calls", .member = &Stopping::warmup_calls,
       .unit = 1, .zero_is_unset = true, .config_range = {1, 1000000}, .flag_range = {1, 100000000},
       .config_note = "", .help = "exactly N warm-up calls, N >= 1 (default: 50 ms of calls)"},
      {.config_key = "warmup_s", .flag = "--warmup-s", .json_key = "warmup_s", .member = &Stopping::warmup_s,
       .unit = 1, .zero_is_unset = false, .config_range = {0, 3600}, .flag_range = {0, 3600},
       .config_note = "", .help = "seconds of warm-up calls (default 0.05)"},
  };
  // clang-format on
  return table;
}

std::vector<std::string> stopping_config_keys() {
  std::vector<std::string> keys;
  for (auto& setting : stopping_settings()) keys.emplace_back(setting.config_key);
  return keys;
}

double StoppingSetting::get(const Stopping& s) const {
  return std::visit([&](auto m) { return static_cast<double>(s.*m) * unit; }, member);
}

void StoppingSetting::set(Stopping& s, double value) const {
  if (auto m = std::get_if<double Stopping::*>(&member)) s.*(*m) = value / unit;
  else s.*std::get<std::size_t Stopping::*>(member) = static_cast<std::size_t>(value);
}

std::string StoppingSetting::arg(const Stopping& s) const {
  if (auto m = std::get_if<std::size_t Stopping::*>(&member)) return std::to_string(s.*(*m));
  return fmt::format("{}", get(s));
}

Stopping apply_overrides(Stopping s, const StoppingOverrides& given) {
  for (auto& setting : stopping_settings())
    if (auto it = given.find(setting.config_key); it != given.end()) setting.set(s, it->second);
  return s;
}

std::vector<std::string> stopping_args(const Stopping& s) {
  std::vector<std::string> args;
  for (auto& setting : stopping_settings())
    if (!(setting.zero_is_unset && setting.get(s) == 0)) args.insert(args.end(), {setting.flag, setting.arg(s)});
  return args;
}

nlohmann::json stopping_json(const Stopping& s) {
  nlohmann::json j = {{"target_sample_s", s.target_sample_s}};
  for (auto& setting : stopping_settings()) {
    if (auto m = std::get_if<std::size_t Stopping::*>(&setting.member)) j[setting.json_key] = s.*(*m);
    else j[setting.json_key] = setting.get(s);
  }
  return j;
}

void restore_stopping(StoppingOverrides& given, const nlohmann::json& stored) {
  if (!stored.is_object()) return;
  for (auto& setting : stopping_settings()) {
    auto it = stored.find(setting.json_key);
    if (it == stored.end() || !it->is_number() || given.count(setting.config_key)) continue;
    double value = it->get<double>();
    if (setting.zero_is_unset && !(value > 0)) continue;
    given[setting.config_key] = value;
  }
}

}  // namespace opmeter
