// The fleet view: the same case on several machines, outliers against identical hardware.
#include "scale/fleet.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "scale/merge.hpp"

using namespace opmeter;
using namespace opmeter::scale;

namespace {

nlohmann::json gpu_context(const std::string& host, double power_limit, const std::string& driver) {
  return {{"host_name", host},
          {"cuda", {{"nvml_driver", driver}}},
          {"gpus", {{{"device", "cuda:0"}, {"name", "H100"}, {"sm_clock_default_mhz", 1755},
                     {"power_limit_w", power_limit}, {"ecc_enabled", true}}}}};
}

Result timed(const std::string& machine, double median_s) {
  Result r;
  r.case_string = "gemm/cublaslt/bf16/M=8,N=8,K=8/device=cuda:0";
  r.status = Status::ok;
  r.summary.median = median_s;
  r.details[kMachineDetail] = machine;
  return r;
}

}  // namespace

TEST(Fleet, MachineFromContextNamesHardwareAndEnvironment) {
  auto m = machine_of(gpu_context("n1", 700, "550.1"), "cuda:0", "rank000");
  EXPECT_EQ(m.host, "n1");
  EXPECT_EQ(m.hardware, "H100, 1755 MHz, 700 W");
  EXPECT_EQ(m.environment.at("driver"), "550.1");
  EXPECT_EQ(m.environment.at("ecc_enabled"), "true");
  auto cpu = machine_of({{"host_name", "c"}, {"cpu", {{"model", "Xeon"}, {"usable_cpus", 2}}}}, "cpu", "r");
  EXPECT_EQ(cpu.hardware, "Xeon, 2 CPUs");
}

TEST(Fleet, RanksSpreadsAndFlagsTheSlowSiblingWithItsDifference) {
  std::map<std::string, Machine> machines;
  for (auto name : {"a", "b", "c", "d"}) machines[name] = machine_of(gpu_context(name, 700, "550.1"), "cuda:0", name);
  machines["d"].environment["driver"] = "535.0";  // same hardware, other driver
  std::vector<Result> results = {timed("a", 1.00), timed("b", 1.01), timed("c", 0.99), timed("d", 1.20)};
  Result alone = timed("a", 1.0);
  alone.case_string = "only/on/one";
  results.push_back(alone);
  auto fleet = fleet_view(results, machines);
  ASSERT_EQ(fleet.size(), 1u);  // the case measured once is not a fleet case
  auto& fc = fleet[0];
  ASSERT_EQ(fc.entries.size(), 4u);
  EXPECT_EQ(fc.entries.front().machine, "c");
  EXPECT_EQ(fc.entries.back().machine, "d");
  // Spread and deviation from the identical-hardware median (1.005), computed by hand.
  EXPECT_NEAR(fc.spread, (1.20 - 0.99) / 1.005, 1e-12);
  EXPECT_NEAR(fc.entries.back().vs_hardware_median, 1.20 / 1.005 - 1, 1e-12);
  for (auto& e : fc.entries) EXPECT_EQ(e.outlier, e.machine == "d") << e.machine;
  ASSERT_EQ(fc.entries.back().differences.size(), 1u);
  EXPECT_EQ(fc.entries.back().differences[0], "driver: 535.0 (others 550.1)");
  auto md = fleet_markdown(fleet, machines);
  EXPECT_NE(md.find("**outlier**; driver: 535.0"), std::string::npos) << md;
}

TEST(Fleet, TwoMachinesOrOtherHardwareAreNoOutliers) {
  std::map<std::string, Machine> machines;
  machines["a"] = machine_of(gpu_context("a", 700, "1"), "cuda:0", "a");
  machines["b"] = machine_of(gpu_context("b", 700, "1"), "cuda:0", "b");
  machines["c"] = machine_of(gpu_context("c", 350, "1"), "cuda:0", "c");  // another power limit: other hardware
  auto fleet = fleet_view({timed("a", 1.0), timed("b", 2.0), timed("c", 5.0)}, machines);
  ASSERT_EQ(fleet.size(), 1u);
  for (auto& e : fleet[0].entries) EXPECT_FALSE(e.outlier) << e.machine;
}

TEST(MergeRuns, ConflictingConfigsAndVersionsAreNamed) {
  RankRun a{"rank000-of-2-h-cpu", "/runs/rank000-of-2-h-cpu", {{"config", "/x.yaml"}, {"shard", {{"rank", 0}, {"size", 2}}}},
            {{"opmeter", {{"version", "0.1"}, {"git_sha", "abc"}}}}, {}};
  RankRun b = a;
  b.name = "rank001-of-2-h-cpu";
  b.dir = "/runs/rank001-of-2-h-cpu";
  b.run["shard"]["rank"] = 1;
  EXPECT_TRUE(merge_conflicts({a, b}).empty());  // the shard differs, nothing else
  RankRun other_config = b;
  other_config.run["config"] = "/y.yaml";
  EXPECT_EQ(merge_conflicts({a, other_config}).size(), 1u);
  RankRun other_version = b;
  other_version.context["opmeter"]["git_sha"] = "def";
  EXPECT_EQ(merge_conflicts({a, other_version}).size(), 1u);
}

// A run given twice would count as two machines; a sharded run's rank twice (two runs) or missing
// (part of the sweep) is named.
TEST(MergeRuns, RunsGivenTwiceAndMissingOrRepeatedRanksAreNamed) {
  RankRun a{"rank000-of-2-h-cpu", "/runs/a/rank000-of-2-h-cpu", {{"config", "/x.yaml"}, {"shard", {{"rank", 0}, {"size", 2}}}},
            {{"opmeter", {{"version", "0.1"}, {"git_sha", "abc"}}}}, {}};
  auto has_conflict = [](const std::vector<RankRun>& runs, const std::string& part) {
    auto c = merge_conflicts(runs);
    return std::any_of(c.begin(), c.end(), [&](const std::string& s) { return s.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has_conflict({a, a}, "rank000-of-2-h-cpu is given twice"));
  EXPECT_TRUE(has_conflict({a}, "rank 1 of 2 is missing"));
  RankRun other_run = a;
  other_run.dir = "/runs/b/rank000-of-2-h-cpu";
  EXPECT_TRUE(has_conflict({a, other_run}, "rank 0 of 2 appears twice"));
  RankRun alone{"h-cpu", "/runs/h-cpu", {{"config", "/x.yaml"}}, a.context, {}};
  RankRun elsewhere = alone;
  elsewhere.dir = "/runs/g-cpu";
  EXPECT_TRUE(merge_conflicts({alone, elsewhere}).empty());  // two machines, one run each
}
