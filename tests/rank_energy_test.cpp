// Energy of a collective summed over the ranks of a launch: each counter once, nothing when a
// rank has no reading, and the result's energy fields replaced by the launch's.
#include "engine/rank_energy.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace opmeter;

TEST(RankEnergy, SumsEachCounterOnce) {
  // 4 ranks on 2 hosts measured on the CPU: the ranks of a host read the same RAPL packages over
  // the same window, so the launch used host 1's 3 J plus host 2's 5 J per call.
  std::vector<RankEnergy> ranks = {{"h1/cpu", 3.0, 30, ""}, {"h1/cpu", 3.0, 30, ""},
                                   {"h2/cpu", 5.0, 50, ""}, {"h2/cpu", 5.0, 50, ""}};
  LaunchEnergy e = sum_over_ranks(ranks);
  ASSERT_TRUE(e.joules_per_call);
  EXPECT_DOUBLE_EQ(*e.joules_per_call, 3.0 + 5.0);
  EXPECT_DOUBLE_EQ(e.avg_power_w, 30.0 + 50.0);
  EXPECT_EQ(e.counters, 2);
  // One GPU per rank: every rank's counter is its own.
  std::vector<RankEnergy> gpus = {{"h1/cuda:0/0000:01:00.0", 0.25, 250, ""}, {"h1/cuda:1/0000:02:00.0", 0.5, 260, ""},
                                  {"h2/cuda:0/0000:01:00.0", 0.125, 240, ""}};
  e = sum_over_ranks(gpus);
  ASSERT_TRUE(e.joules_per_call);
  EXPECT_DOUBLE_EQ(*e.joules_per_call, 0.875);
  EXPECT_EQ(e.counters, 3);
}

TEST(RankEnergy, NoNumberWhenARankHasNoReading) {
  std::vector<RankEnergy> ranks = {{"h1/cuda:0/a", 0.25, 250, ""}, {"h1/cuda:1/b", std::nullopt, 0, "NVML not found"}};
  LaunchEnergy e = sum_over_ranks(ranks);
  EXPECT_FALSE(e.joules_per_call);
  EXPECT_NE(e.reason.find("rank 1"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("NVML not found"), std::string::npos) << e.reason;
  EXPECT_FALSE(sum_over_ranks({}).joules_per_call);
}

namespace {
// Three ranks: this one and two others that read other GPUs (or, with `missing`, no counter).
class FakeComm : public scale::LaunchComm {
 public:
  explicit FakeComm(bool missing) : missing_(missing) {}
  int rank() const override { return 0; }
  int size() const override { return 3; }
  void broadcast(void*, std::size_t, int) override {}
  bool any(bool yes) override { return yes; }
  double largest(double v) override { return v; }
  std::vector<std::string> gather(const std::string& mine) override {
    std::vector<std::string> all = {mine};
    for (int r = 1; r < 3; ++r) {
      auto j = nlohmann::json::parse(mine);
      j["counter"] = "other/cuda:" + std::to_string(r);
      if (missing_ && r == 2) j.erase("joules"), j["reason"] = "no counter";
      all.push_back(j.dump());
    }
    return all;
  }

 private:
  bool missing_;
};

Result measured() {
  Result r;
  r.kase = parse_case("collective/nccl/fp32/kind=allreduce,bytes=4096,inplace=0/device=cuda:0");
  r.energy_j = 0.002;
  r.avg_power_w = 300;
  r.set_metric("energy_package_j", {.value = 0.001, .unit = "J", .better = Better::lower});
  return r;
}
}  // namespace

TEST(RankEnergy, ResultCarriesTheLaunchsEnergy) {
  Result r = measured();
  FakeComm comm(false);
  sum_energy_over_ranks(r, comm);
  ASSERT_TRUE(r.energy_j);
  EXPECT_DOUBLE_EQ(*r.energy_j, 3 * 0.002);
  EXPECT_DOUBLE_EQ(*r.avg_power_w, 3 * 300.0);
  EXPECT_EQ(r.details.at("energy_ranks"), "summed over 3 counters of 3 ranks");
  EXPECT_EQ(r.details.at("energy_this_rank_j"), "0.002");
  EXPECT_EQ(r.metrics.count("energy_package_j"), 0u);  // one rank's domains are not the launch's

  Result partial = measured();
  FakeComm missing(true);
  sum_energy_over_ranks(partial, missing);
  EXPECT_FALSE(partial.energy_j);
  EXPECT_FALSE(partial.avg_power_w);
  EXPECT_NE(partial.energy_reason.find("rank 2"), std::string::npos) << partial.energy_reason;
}

TEST(RankEnergy, CounterNamesTheGpuByItsBus) {
  Result r = measured();
  r.details["pci_bus_id"] = "0000:65:00.0";
  const std::string name = energy_counter_name(r);
  EXPECT_NE(name.find("/cuda:0/0000:65:00.0"), std::string::npos) << name;
  Result cpu;
  cpu.kase = parse_case("collective/mpi/fp32/kind=allreduce,bytes=4096,inplace=0/threads=1");
  cpu.details["pci_bus_id"] = "x";
  EXPECT_TRUE(energy_counter_name(cpu).ends_with("/cpu")) << energy_counter_name(cpu);
}
