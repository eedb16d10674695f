// Sharded runs: rank and size from launchers' environments, and the split of a sweep.
#include "scale/shard.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/shard_run.hpp"
#include "engine/rank_gate.hpp"
#include "opmeter/errors.hpp"

using namespace opmeter;
using namespace opmeter::scale;

namespace {

EnvReader fake(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

std::vector<Case> sweep(int n) {
  std::vector<Case> out;
  for (int i = 1; i <= n; ++i) {
    Case c;
    c.op = "gemm";
    c.impl = "reference";
    c.params = {{"M", std::to_string(i)}, {"N", "8"}, {"K", "8"}};
    out.push_back(c);
  }
  return out;
}

double by_m(const Case& c) { return static_cast<double>(c.get_int("M")); }
bool none(const Case&) { return false; }

}  // namespace

TEST(ShardEnv, NoLauncherIsNoShard) { EXPECT_FALSE(shard_from_env(fake({})).has_value()); }

TEST(ShardEnv, OpenMpiWithLocalRank) {
  auto s = shard_from_env(fake({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rank, 2);
  EXPECT_EQ(s->size, 3);
  EXPECT_EQ(s->local_rank, 1);
}

TEST(ShardEnv, PmiAndSrun) {
  auto pmi = shard_from_env(fake({{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}}));
  ASSERT_TRUE(pmi);
  EXPECT_EQ(pmi->rank, 1);
  EXPECT_EQ(pmi->size, 4);
  auto srun = shard_from_env(fake({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"}}));
  ASSERT_TRUE(srun);
  EXPECT_EQ(srun->rank, 5);
  EXPECT_EQ(srun->local_rank, 3);
}

TEST(ShardEnv, SlurmArrayCountsFromItsFirstTask) {
  // sbatch --array=1-4: task ids 1..4 are ranks 0..3 (srun inside a one-task job sets NTASKS=1).
  auto s = shard_from_env(fake({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"},
                                {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rank, 2);
  EXPECT_EQ(s->size, 4);
}

TEST(ShardEnv, ArrayOfMultiTaskStepsShardsTwice) {
  auto s = shard_from_env(fake({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "3"},
                                {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->rank, 3);  // task 1 of 3, process 1 of 2
  EXPECT_EQ(s->size, 6);
}

// The message of the UsageError `f` throws ("no error" when it does not).
template <class F>
std::string usage_error_of(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ShardEnv, BadValuesAreUsageErrors) {
  auto env_error = [](std::map<std::string, std::string> env) {
    return usage_error_of([&] { shard_from_env(fake(env)); });
  };
  EXPECT_NE(env_error({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "3"}})
                .find("OMPI_COMM_WORLD_RANK=3 is not a rank of OMPI_COMM_WORLD_SIZE=3"),
            std::string::npos);
  EXPECT_NE(env_error({{"PMI_RANK", "x"}, {"PMI_SIZE", "2"}}).find("PMI_RANK='x' is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(env_error({{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})
                .find("SLURM_ARRAY_TASK_ID=9 is not a task of an array of 4"),
            std::string::npos);
}

TEST(ShardFlag, ParsesIOfNAndAuto) {
  auto s = parse_shard("1/4", fake({}));
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.size, 4);
  EXPECT_FALSE(parse_shard("auto", fake({})).active());
  EXPECT_EQ(parse_shard("auto", fake({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}})).rank, 1);
  for (const char* bad : {"4/4", "-1/2", "1/0", "1", "a/b", "1/2/3", "", "1/"})
    EXPECT_NE(usage_error_of([&] { parse_shard(bad, fake({})); }).find("expected auto or I/N with 0 <= I < N"),
              std::string::npos)
        << bad;
}

TEST(ShardSplit, EveryCaseOnExactlyOneRank) {
  auto cases = sweep(23);
  std::multiset<std::string> seen;
  for (int r = 0; r < 3; ++r)
    for (auto& c : shard_cases(cases, Shard{r, 3}, by_m, none)) seen.insert(c.to_string());
  ASSERT_EQ(seen.size(), cases.size());
  for (auto& c : cases) EXPECT_EQ(seen.count(c.to_string()), 1u) << c.to_string();
}

TEST(ShardSplit, BalancedByCostNotCount) {
  // One case as expensive as all the others together: it is a rank's whole share.
  auto cases = sweep(10);
  auto cost = [](const Case& c) { return c.get_int("M") == 10 ? 45.0 : 5.0; };
  auto rank0 = shard_cases(cases, Shard{0, 2}, cost, none);
  auto rank1 = shard_cases(cases, Shard{1, 2}, cost, none);
  ASSERT_EQ(rank0.size(), 1u);
  EXPECT_EQ(rank0[0].get_int("M"), 10);
  EXPECT_EQ(rank1.size(), 9u);
  // Equal costs: counts differ by at most one.
  auto flat = [](const Case&) { return 1.0; };
  for (int r = 0; r < 4; ++r) {
    auto n = shard_cases(sweep(10), Shard{r, 4}, flat, none).size();
    EXPECT_TRUE(n == 2 || n == 3) << r << ": " << n;
  }
}

TEST(ShardSplit, DeterministicAndInPlanOrder) {
  auto cases = sweep(12);
  auto a = shard_cases(cases, Shard{1, 3}, by_m, none);
  auto b = shard_cases(cases, Shard{1, 3}, by_m, none);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_string(), b[i].to_string());
  for (std::size_t i = 1; i < a.size(); ++i) EXPECT_LT(a[i - 1].get_int("M"), a[i].get_int("M"));
}

TEST(ShardSplit, CeilingsRunOnEveryRank) {
  auto cases = sweep(6);
  auto ceiling = [](const Case& c) { return c.get_int("M") == 1; };
  for (int r = 0; r < 3; ++r) {
    auto mine = shard_cases(cases, Shard{r, 3}, by_m, ceiling);
    ASSERT_FALSE(mine.empty());
    EXPECT_EQ(mine[0].get_int("M"), 1) << "rank " << r;
  }
}

TEST(ShardDir, NamedByRankHostAndDevice) {
  EXPECT_EQ(rank_dir_name(Shard{3, 12}, "node-7.cluster", "cuda:1"), "rank003-of-12-node-7.cluster-cuda-1");
  EXPECT_EQ(rank_dir_name(Shard{0, 2}, "a/b", "cpu").rfind(rank_dir_prefix(Shard{0, 2}), 0), 0u);
  EXPECT_EQ(rank_dir_name(Shard{0, 2}, "a/b", "cpu").find('/'), std::string::npos);
}

// What `run` does with a shard: local rank k takes GPU k, and the work model ranks costs.

TEST(ShardRun, LocalRankPicksTheGpuUnlessADeviceIsGiven) {
  Case gpu = parse_case("gemm/reference/fp32/M=8,N=8,K=8/threads=1");
  gpu.device = "cuda:0";
  Case host = parse_case("gemm/reference/fp32/M=9,N=8,K=8/threads=1");
  Shard s{0, 2, 3, "test"};  // local rank 3; both ranks' cases together
  std::vector<Case> both = {gpu, host};
  auto mine = [&](bool device_given) {
    std::vector<std::string> devices;
    for (int r = 0; r < 2; ++r) {
      s.rank = r;
      for (auto& c : cases_of_shard(both, s, Stopping{}, "", device_given)) devices.push_back(c.device);
    }
    std::sort(devices.begin(), devices.end());
    return devices;
  };
  EXPECT_EQ(mine(false), (std::vector<std::string>{"cpu", "cuda:3"}));
  EXPECT_EQ(mine(true), (std::vector<std::string>{"cpu", "cuda:0"}));
}

TEST(ShardRun, WorkModelCostGrowsWithTheWorkBeyondTheMinimumTime) {
  Stopping st;
  st.min_time_s = 0.01;
  st.min_samples = 10;
  const double small = work_model_cost_s(parse_case("gemm/reference/fp32/M=8,N=8,K=8/threads=1"), st);
  const double big = work_model_cost_s(parse_case("gemm/reference/fp32/M=2048,N=2048,K=2048/threads=1"), st);
  EXPECT_NEAR(small, st.warmup_s + st.min_time_s, 1e-12);  // a tiny case costs its minimum time
  // 10 samples of 2 * 2048^3 flops at the model's 20 GFLOP/s per thread.
  EXPECT_NEAR(big, st.warmup_s + 10 * 2.0 * 2048.0 * 2048.0 * 2048.0 / 20e9, 1e-6);
}

TEST(ShardDevice, LocalRankKTakesGpuK) {
  EXPECT_EQ(device_for_local_rank("cuda:0", 3), "cuda:3");
  EXPECT_EQ(device_for_local_rank("cuda:2", 0), "cuda:0");
  EXPECT_EQ(device_for_local_rank("cuda:0", -1), "cuda:0");  // local rank unknown: as given
  EXPECT_EQ(device_for_local_rank("cpu", 2), "cpu");         // the host is every rank's own
}

// A rank or size beyond an int names its variable (4294967298 was read as 2), and so does an
// array of steps whose ranks would not fit.
TEST(ShardEnv, ValuesBeyondAnIntAreUsageErrors) {
  auto env_error = [](std::map<std::string, std::string> env) {
    return usage_error_of([&] { shard_from_env(fake(env)); });
  };
  EXPECT_NE(
      env_error({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4294967298"}}).find("SLURM_NTASKS='4294967298' is more than"),
      std::string::npos);
  EXPECT_NE(env_error({{"PMI_RANK", "99999999999999999999999"}, {"PMI_SIZE", "2"}})
                .find("PMI_RANK='99999999999999999999999'"),
            std::string::npos);
  EXPECT_NE(env_error({{"SLURM_ARRAY_TASK_ID", "1"},
                       {"SLURM_ARRAY_TASK_COUNT", "70000"},
                       {"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "70000"}})
                .find("is more than 2147483647 ranks"),
            std::string::npos);
  EXPECT_EQ(shard_from_env(fake({{"PMI_RANK", "1"}, {"PMI_SIZE", "2147483647"}}))->size, 2147483647);
}

// Half a pair leaves the process unsharded: said, with the --shard to give. A batch script's own
// SLURM_PROCID=0 is no half pair.
TEST(ShardEnv, AHalfSetPairIsNamed) {
  auto one = half_set_launcher(fake({{"SLURM_ARRAY_TASK_ID", "3"}}));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NE(one[0].find("SLURM_ARRAY_TASK_ID=3 is set without SLURM_ARRAY_TASK_COUNT"), std::string::npos) << one[0];
  auto procid = half_set_launcher(fake({{"SLURM_PROCID", "1"}}));
  ASSERT_EQ(procid.size(), 1u);
  EXPECT_NE(procid[0].find("SLURM_PROCID=1 is set without SLURM_NTASKS"), std::string::npos) << procid[0];
  EXPECT_TRUE(half_set_launcher(fake({{"SLURM_PROCID", "0"}})).empty());
  EXPECT_TRUE(half_set_launcher(fake({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}})).empty());
  EXPECT_TRUE(half_set_launcher(fake({})).empty());
}

TEST(ShardSplit, CasesAcrossRanksLeaveOutTheRanksOwnDeviceAndThreads) {
  Case gpu0 = parse_case("gemm/reference/fp32/M=8,N=8,K=8/threads=1"), gpu1 = gpu0, host1 = gpu0, host4 = gpu0;
  gpu0.device = "cuda:0";
  gpu1.device = "cuda:1";
  host4.threads = 4;
  EXPECT_EQ(case_across_ranks(gpu0), case_across_ranks(gpu1));
  EXPECT_EQ(case_across_ranks(host1), case_across_ranks(host4));
  EXPECT_NE(case_across_ranks(gpu0), case_across_ranks(host1));  // a GPU case is not the host's
  Case other = host1;
  other.params[0].second = "9";
  EXPECT_NE(case_across_ranks(other), case_across_ranks(host1));
}

// Ranks whose usable CPUs differ plan the same cases with other thread counts (threads defaults
// to them): they split them the same way, so each case is measured once (a compute-bound GEMM
// and a memory-bound ReLU traded places when the cost divided by the threads).
TEST(ShardRun, TheSplitDoesNotDependOnTheRanksThreads) {
  std::vector<Case> plan;
  for (int i = 0; i < 6; ++i) {
    plan.push_back(parse_case(fmt::format("gemm/reference/fp32/M={0},N={0},K={0}/threads=1", 200 + 8 * i)));
    plan.push_back(parse_case(fmt::format("relu/reference/fp32/batch=1,seq={},hidden=4096/threads=1", 300 + 8 * i)));
  }
  auto with_threads = [&](int threads) {
    auto cases = plan;
    for (auto& c : cases) c.threads = threads;
    return cases;
  };
  Stopping st;
  st.min_time_s = 0;
  st.min_samples = 10;
  std::string split1, split4;
  auto one = cases_of_shard(with_threads(1), Shard{0, 2}, st, "", false, &split1);
  auto four = cases_of_shard(with_threads(4), Shard{0, 2}, st, "", false, &split4);
  std::vector<std::string> a, b;
  for (auto& c : one) a.push_back(case_across_ranks(c));
  for (auto& c : four) b.push_back(case_across_ranks(c));
  EXPECT_EQ(a, b);
  EXPECT_EQ(split1, split4);
  EXPECT_EQ(split1.size(), 16u);
  // Another split (rank 1 of 3 deals otherwise) has another hash.
  std::string split3;
  cases_of_shard(with_threads(1), Shard{0, 3}, st, "", false, &split3);
  EXPECT_NE(split3, split1);
}
