// Each run setting is mapped once (engine/run_settings.hpp): whatever the table holds travels
// unchanged from the command line and a config into run.json, back through --resume, and into an
// isolated child's arguments. The tests walk the table, so a new setting is covered by adding it.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "tests/run_args.hpp"
#include "engine/run_settings.hpp"
#include "opmeter/backend.hpp"
#include "config/config.hpp"

using namespace opmeter;

namespace {
using opmeter::testing::parse_run;

// A value in the setting's range and off its default (1, 0.5, 5; graph 100).
double some_value(const RunSetting& s) {
  double v = s.lo + (s.hi - s.lo) / 8;
  return s.integer ? std::round(v) : v;
}

// A device of the backend whose case setting `key` is.
std::string device_taking(const std::string& key) {
  for (auto* b : backends())
    for (auto& def : b->settings())
      if (def.name == key) return b->first_device();
  return "";
}
}  // namespace

TEST(RunSettings, EachSettingRoundTripsFromTheCommandLineToAChild) {
  ASSERT_FALSE(run_setting_table().empty());
  for (auto& s : run_setting_table()) {
    SCOPED_TRACE(s.key);
    const double v = some_value(s);
    // The command line.
    RunArgs a = parse_run({s.flag, fmt::format("{}", v)});
    ASSERT_EQ(a.settings.count(s.key), 1u);
    EXPECT_EQ(a.settings.at(s.key), v);

    // A config: RunOptions' settings come back in the plan, a case setting on every case.
    if (s.is_case_setting()) {
      auto plan = load_config_text(fmt::format("ops: [gemm]\ndevice: {}\n{}: {}\ndtypes: [fp32]\n"
                                               "shapes: [{{name: custom, shapes: [[8, 8, 8]]}}]\n",
                                               device_taking(s.key), s.key, v),
                                   "t.yaml", 1);
      ASSERT_FALSE(plan.cases.empty());
      for (auto& c : plan.cases) EXPECT_EQ(c.setting_int(s.key), v) << c.to_string();
    } else {
      auto plan = load_config_text(fmt::format("ops: [peak]\n{}: {}\n", s.key, v), "t.yaml", 1);
      ASSERT_EQ(plan.run_settings.count(s.key), 1u);
      EXPECT_EQ(plan.run_settings.at(s.key), v);
    }

    // run.json, then --resume DIR reading it back.
    const RunOptions options = apply_run_settings(RunOptions{}, a.settings);
    nlohmann::json stored;
    add_run_settings_json(stored, options, a.settings);
    ASSERT_TRUE(stored.contains(s.key)) << stored.dump();
    RunSettingValues restored;
    restore_run_settings(restored, stored);
    EXPECT_EQ(restored[s.key], v);
    RunSettingValues given_now = {{s.key, s.lo}};  // a flag given with --resume wins
    restore_run_settings(given_now, stored);
    EXPECT_EQ(given_now[s.key], s.lo);

    // The isolated child: RunOptions' settings as flags, a case setting in the case string.
    const RunOptions resumed = apply_run_settings(RunOptions{}, restored);
    if (s.is_case_setting()) {
      Case c;
      c.op = "gemm", c.impl = "x", c.device = device_taking(s.key);
      c.params = {{"M", "8"}};
      apply_case_settings(c, restored);
      EXPECT_EQ(parse_case(c.to_string()).setting_int(s.key), v) << c.to_string();
      apply_case_settings(c, {{s.key, 0}});  // 0: off
      EXPECT_EQ(parse_case(c.to_string()).setting_int(s.key, -1), -1) << c.to_string();
    } else {
      const RunOptions child = apply_run_settings(RunOptions{}, parse_run(run_setting_args(resumed)).settings);
      EXPECT_EQ(child.*s.member, v);
    }
  }
}

TEST(RunSettings, ChildArgumentsCarryEveryRunOptionsSetting) {
  RunOptions o;
  auto args = run_setting_args(o);
  EXPECT_EQ(args.size(), 2 * run_setting_config_keys().size());
  RunOptions child = apply_run_settings(RunOptions{.energy_window_s = 9, .cooldown_s = 9, .heat_max_s = 9},
                                        parse_run(args).settings);
  for (auto& s : run_setting_table())
    if (!s.is_case_setting()) {
      EXPECT_EQ(child.*s.member, o.*s.member) << s.key;
    }
}

TEST(RunSettings, NamesAreUniqueAndNoneIsAStoppingSetting) {
  std::set<std::string> keys, flags;
  for (auto& s : stopping_settings()) keys.insert(s.config_key), flags.insert(s.flag);
  for (auto& s : run_setting_table()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    EXPECT_LT(s.lo, s.hi) << s.key;
  }
}

// A setting that batches launches (CUDA's graph) is dropped where samples run back to back and for
// a whole model; other backends' cases keep what they have.
TEST(RunSettings, LaunchBatchingIsDroppedByWhatTheBackendDeclares) {
  for (auto* b : backends())
    for (auto& def : b->settings()) {
      // Parsed rather than assigned member by member: GCC 12's -Wrestrict misfires on the latter.
      Case c = parse_case(fmt::format("gemm/x/fp32/M=8/device={}", b->first_device()));
      c.set_setting(def.name, "4");
      drop_launch_batching(c);
      EXPECT_EQ(c.setting_int(def.name, -1) == 4, !def.batches_launches) << def.name;
    }
  Case host = parse_case("gemm/x/fp32/M=8/threads=1");
  drop_launch_batching(host);
  EXPECT_EQ(host.to_string(), "gemm/x/fp32/M=8/threads=1");
}
