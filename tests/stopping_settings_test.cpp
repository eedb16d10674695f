// The stopping settings are mapped once: a config's values reach an isolated child unchanged, and
// a stored run's settings restore the same Stopping.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cli/commands.hpp"
#include "tests/run_args.hpp"
#include "engine/stopping_settings.hpp"
#include "config/config.hpp"

using namespace opmeter;

namespace {
// Parses `opmeter run ARGS...` as the binary does and applies the stopping flags to the defaults.
Stopping stopping_from_flags(const std::vector<std::string>& args) {
  return apply_overrides(Stopping{}, opmeter::testing::parse_run(args).stopping);
}

void expect_same(const Stopping& a, const Stopping& b) {
  for (auto& setting : stopping_settings()) EXPECT_EQ(setting.get(a), setting.get(b)) << setting.config_key;
  EXPECT_EQ(stopping_json(a), stopping_json(b));
}
}  // namespace

TEST(StoppingSettings, ConfigToChildArgumentsAndBack) {
  auto plan = load_config_text(
      "ops: [peak]\nstopping: {max_noise: 0.7, min_samples: 7, min_time_s: 0.25, "
      "timeout_s: 2.5, samples: 12, warmup: 3, warmup_s: 0.125}\n",
      "t.yaml", 1);
  const Stopping& s = plan.stopping;
  EXPECT_DOUBLE_EQ(s.max_noise, 0.007);
  EXPECT_EQ(s.min_samples, 7u);
  EXPECT_EQ(s.min_time_s, 0.25);
  EXPECT_EQ(s.timeout_s, 2.5);
  EXPECT_EQ(s.fixed_samples, 12u);
  EXPECT_EQ(s.warmup_calls, 3u);
  EXPECT_EQ(s.warmup_s, 0.125);

  auto args = stopping_args(s);
  EXPECT_EQ(args.size(), 2 * stopping_settings().size());  // every setting was given
  expect_same(stopping_from_flags(args), s);
}

TEST(StoppingSettings, UnsetCountsStayUnsetInAChild) {
  Stopping s;  // no fixed sample count, warm-up by time
  auto args = stopping_args(s);
  EXPECT_EQ(std::find(args.begin(), args.end(), "--samples"), args.end());
  EXPECT_EQ(std::find(args.begin(), args.end(), "--warmup"), args.end());
  expect_same(stopping_from_flags(args), s);
}

TEST(StoppingSettings, StoredRunSettingsRestoreTheSameStopping) {
  Stopping s;
  s.max_noise = 0.02;
  s.min_samples = 5;
  s.timeout_s = 3;
  s.fixed_samples = 4;
  StoppingOverrides restored;
  restore_stopping(restored, stopping_json(s));
  expect_same(apply_overrides(Stopping{}, restored), s);

  StoppingOverrides given = {{"timeout_s", 9}};  // flags given now win over the stored ones
  restore_stopping(given, stopping_json(s));
  EXPECT_EQ(apply_overrides(Stopping{}, given).timeout_s, 9);
}

TEST(StoppingSettings, NamesAreUnique) {
  std::set<std::string> config_keys, flags, json_keys;
  for (auto& setting : stopping_settings()) {
    EXPECT_TRUE(config_keys.insert(setting.config_key).second) << setting.config_key;
    EXPECT_TRUE(flags.insert(setting.flag).second) << setting.flag;
    EXPECT_TRUE(json_keys.insert(setting.json_key).second) << setting.json_key;
  }
}
