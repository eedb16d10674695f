// `opmeter run` under a launcher: local rank k runs its CUDA cases on cuda:k when --device names
// no GPU or the first (a command written for one GPU), and every rank on cuda:N when it names
// another; `check` follows the same rule (CheckCli.LocalRankKChecksOnGpuKUnderALauncher).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/cli_helpers.hpp"

namespace {

// The devices of the relu cases local rank 1 of 2 plans (a dry run) with these arguments.
std::set<std::string> rank1_devices(const std::string& args) {
  const auto dir = temp_dir("run_launcher_device");
  write(dir, "relu.yaml", "ops: [relu]\nimpls: [cuda]\ndtypes: [fp32]\nbatch: [1, 2, 3, 4]\nseq: [8]\nhidden: [64]\n");
  return devices_as_rank_1_of_2(
      "run " + (dir / "relu.yaml").string() + " " + args + " --dry-run --out " + (dir / "out").string(), "relu/cuda/");
}

TEST(RunUnderALauncher, LocalRankKRunsOnGpuKUnlessAnotherGpuIsNamed) {
  if (!cli("list").text.empty() && cli("list").text.find("[cuda]") == std::string::npos)
    GTEST_SKIP() << "this opmeter has no CUDA impls to plan";
  EXPECT_EQ(rank1_devices("--device cuda:0"), (std::set<std::string>{"device=cuda:1"}));
  EXPECT_EQ(rank1_devices("--device cuda:3"), (std::set<std::string>{"device=cuda:3"}));
}

}  // namespace
