// The fleet view: the same case on several machines, outliers against identical hardware.
#include "scale/fleet.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "opmeter/errors.hpp"
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

namespace {
RankRun rank_of(int rank, int size, const std::string& dir) {
  RankRun r{dir.substr(dir.rfind('/') + 1),
            dir,
            {{"config", "/x.yaml"}, {"shard", {{"rank", rank}, {"size", size}}}},
            {{"opmeter", {{"version", "0.1"}, {"git_sha", "abc"}}}},
            {}};
  return r;
}
bool names(const std::vector<std::string>& conflicts, const std::string& part) {
  return std::any_of(conflicts.begin(), conflicts.end(),
                     [&](const std::string& s) { return s.find(part) != std::string::npos; });
}
Result result_of(const std::string& case_string, double median_s = 1e-3) {
  Result r;
  r.kase = parse_case(case_string);
  r.case_string = r.kase.to_string();
  r.status = Status::ok;
  r.summary.median = median_s;
  return r;
}
}  // namespace

// Ranks that split the plan otherwise (another model, or each by its own CPUs) measured some cases
// twice and others never: named, as another config is.
TEST(MergeRuns, RanksThatSplitOtherwiseAreNamed) {
  auto a = rank_of(0, 2, "/runs/rank000-of-2-h-cpu"), b = rank_of(1, 2, "/runs/rank001-of-2-h-cpu");
  a.run["shard"]["split"] = "00000000000000aa";
  b.run["shard"]["split"] = "00000000000000aa";
  EXPECT_TRUE(merge_conflicts({a, b}).empty());
  b.run["shard"]["split"] = "00000000000000bb";
  EXPECT_TRUE(names(merge_conflicts({a, b}), "rank001-of-2-h-cpu split the cases otherwise than rank000-of-2-h-cpu"));
  // Another --shard-model file: its hash is a run setting.
  b.run["shard"]["split"] = "00000000000000aa";
  a.run["shard_model_hash"] = "1";
  b.run["shard_model_hash"] = "2";
  EXPECT_TRUE(names(merge_conflicts({a, b}), "ran other settings"));
}

// A rank that died part-way lacks some of its planned cases: named, with the resume that finishes it.
TEST(MergeRuns, ARankThatStoppedPartWayIsNamedWithItsResume) {
  auto a = rank_of(0, 2, "/runs/t/rank000-of-2-h-cpu"), b = rank_of(1, 2, "/runs/t/rank001-of-2-h-cpu");
  const std::string x = "gemm/reference/fp32/M=1,N=8,K=8/threads=1", y = "gemm/reference/fp32/M=2,N=8,K=8/threads=1",
                    z = "gemm/reference/fp32/M=3,N=8,K=8/threads=1";
  a.run["shard"]["cases"] = {x};
  b.run["shard"]["cases"] = {y, z};
  a.results = {result_of(x)};
  b.results = {result_of(y)};
  auto c = merge_conflicts({a, b});
  ASSERT_EQ(c.size(), 1u) << c.front();
  EXPECT_NE(c[0].find("rank001-of-2-h-cpu lacks 1 of its 2 planned cases (" + z + ")"), std::string::npos) << c[0];
  EXPECT_NE(c[0].find("opmeter run --resume /runs/t --shard 1/2"), std::string::npos) << c[0];
  b.results.push_back(result_of(z));
  EXPECT_TRUE(merge_conflicts({a, b}).empty());
}

// A size of 2^31 - 1 in a run.json: a few missing ranks named and the rest counted, at once.
TEST(MergeRuns, AHugeShardSizeNamesAFewMissingRanks) {
  auto a = rank_of(0, 2147483647, "/runs/rank000-of-2-h-cpu");
  auto c = merge_conflicts({a});
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0], "rank 1 of 2147483647 is missing: its part of the cases is not merged");
  EXPECT_EQ(c[5], "2147483641 more of the 2147483647 ranks are missing");
}

// Two hosts that each wrote results/: two machines, each with its own context.
TEST(MergeRuns, RunsOfOneDirectoryNameStayTwoMachines) {
  RankRun a{"results",
            "/data/hostA/results",
            {{"config", "/x.yaml"}},
            {{"host_name", "a"}, {"cpu", {{"model", "Intel Xeon"}, {"usable_cpus", 2}}}},
            {}};
  RankRun b{"results",
            "/data/hostB/results/",
            {{"config", "/x.yaml"}},
            {{"host_name", "b"}, {"cpu", {{"model", "AMD EPYC"}, {"usable_cpus", 2}}}},
            {}};
  RankRun c{"other", "/data/other", {{"config", "/x.yaml"}}, a.context, {}};
  a.results = {result_of("gemm/reference/fp32/M=1,N=8,K=8/threads=1", 1.0)};
  b.results = {result_of("gemm/reference/fp32/M=1,N=8,K=8/threads=1", 2.0)};
  std::vector<RankRun> runs = {a, b, c};
  name_machines(runs);
  EXPECT_EQ(runs[0].name, "hostA/results");
  EXPECT_EQ(runs[1].name, "hostB/results");
  EXPECT_EQ(runs[2].name, "other");
  auto m = merge_runs(runs);
  ASSERT_EQ(m.machines.size(), 3u);
  EXPECT_EQ(m.machines.at("hostA/results").hardware, "Intel Xeon, 2 CPUs");
  EXPECT_EQ(m.machines.at("hostB/results").hardware, "AMD EPYC, 2 CPUs");
  EXPECT_EQ(m.results[0].details.at(kMachineDetail), "hostA/results");
  EXPECT_EQ(m.results[1].details.at(kMachineDetail), "hostB/results");
  // Without distinct names merge refuses rather than lose one machine's context.
  std::vector<RankRun> same = {a, b};
  EXPECT_THROW(merge_runs(same), UsageError);
}

// A merged directory merged again keeps each result's machine and every machine's context.
TEST(MergeRuns, AMergedRunMergedAgainKeepsItsMachines) {
  auto r0 = rank_of(0, 2, "/runs/t/rank000-of-2-a-cpu"), r1 = rank_of(1, 2, "/runs/t/rank001-of-2-b-cpu");
  r0.context["cpu"] = {{"model", "Xeon"}, {"usable_cpus", 2}};
  r1.context["cpu"] = {{"model", "EPYC"}, {"usable_cpus", 4}};
  const std::string x = "gemm/reference/fp32/M=1,N=8,K=8/threads=1", y = "gemm/reference/fp32/M=2,N=8,K=8/threads=1";
  r0.results = {result_of(x, 1.0)};
  r1.results = {result_of(x, 2.0), result_of(y)};
  auto once = merge_runs({r0, r1});
  RankRun merged{"m", "/runs/m", once.run, once.context, once.results};
  auto twice = merge_runs({merged});
  ASSERT_EQ(twice.results.size(), 3u);
  EXPECT_EQ(twice.results[0].details.at(kMachineDetail), "rank000-of-2-a-cpu");
  EXPECT_EQ(twice.results[2].details.at(kMachineDetail), "rank001-of-2-b-cpu");
  ASSERT_EQ(twice.machines.size(), 2u);
  EXPECT_EQ(twice.machines.at("rank001-of-2-b-cpu").hardware, "EPYC, 4 CPUs");
  ASSERT_EQ(twice.context["fleet"].size(), 2u);
  EXPECT_EQ(fleet_view(twice.results, twice.machines).size(), 1u);  // x on two machines, as before
  // Two merged directories of the same names: each keeps its machines, under its own name.
  RankRun again = merged;
  again.name = "m2";
  auto both = merge_runs({merged, again});
  EXPECT_EQ(both.machines.size(), 4u);
  EXPECT_TRUE(both.machines.count("m2/rank000-of-2-a-cpu"));
  EXPECT_EQ(both.results[3].details.at(kMachineDetail), "m2/rank000-of-2-a-cpu");
}

// A collective is one measurement of all the ranks (the slowest's time): once in the merged set,
// and not a case "on several machines" in the fleet view.
TEST(MergeRuns, ACollectiveIsKeptOnce) {
  auto r0 = rank_of(0, 2, "/runs/c/rank000-of-2-h-cpu"), r1 = rank_of(1, 2, "/runs/c/rank001-of-2-h-cpu");
  const std::string coll = "collective/mpi/fp32/kind=allreduce,bytes=64,inplace=0/threads=1";
  const std::string coll2 = "collective/mpi/fp32/kind=allreduce,bytes=64,inplace=0/threads=2";  // rank 1's own threads
  const std::string peak = "gemm/reference/fp32/M=1,N=8,K=8/threads=1";
  r0.results = {result_of(coll), result_of(peak)};
  r1.results = {result_of(coll2), result_of(peak)};
  auto m = merge_runs({r0, r1});
  ASSERT_EQ(m.results.size(), 3u);
  EXPECT_EQ(m.results[0].case_string, parse_case(coll).to_string());
  EXPECT_EQ(m.results[0].details.at(kMachineDetail), "rank000-of-2-h-cpu");
  auto fleet = fleet_view(m.results, m.machines);
  ASSERT_EQ(fleet.size(), 1u);  // the GEMM each rank measured, not the collective
  EXPECT_EQ(fleet[0].case_string, parse_case(peak).to_string());
}

TEST(Fleet, MarkdownKeepsAPipeInANameInsideItsCell) {
  std::map<std::string, Machine> machines;
  for (auto name : {"a|b", "c"}) machines[name] = machine_of(gpu_context(name, 700, "1"), "cuda:0", name);
  auto md = fleet_markdown(fleet_view({timed("a|b", 1.0), timed("c", 1.1)}, machines), machines);
  EXPECT_NE(md.find("| a/b | H100"), std::string::npos) << md;
  EXPECT_EQ(md.find("a|b"), std::string::npos) << md;
}

TEST(Fleet, MarkdownEscapesHtmlInANameAsTheOtherTablesDo) {
  std::map<std::string, Machine> machines;
  for (auto name : {"<img src=x onerror=y>", "c"})
    machines[name] = machine_of(gpu_context(name, 700, "1"), "cuda:0", name);
  auto md = fleet_markdown(fleet_view({timed("<img src=x onerror=y>", 1.0), timed("c", 1.1)}, machines), machines);
  EXPECT_NE(md.find("| &lt;img src=x onerror=y&gt; | H100"), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos) << md;
}
