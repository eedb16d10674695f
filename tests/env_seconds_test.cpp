// Waits in seconds set by environment variables (util/env_seconds.hpp): what they accept and the
// message of what they refuse, and a bad OPMETER_RANK_WAIT_S stopping a launched run with exit 2.
#include "util/env_seconds.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {
// The UsageError's message for `value`, or "accepted".
std::string refusal(const char* value) {
  try {
    seconds_setting("OPMETER_X_S", value, 7);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST(EnvSeconds, ANumberIsItsSecondsAndUnsetOrEmptyIsTheFallback) {
  EXPECT_DOUBLE_EQ(seconds_setting("OPMETER_X_S", "2.5", 7), 2.5);
  EXPECT_DOUBLE_EQ(seconds_setting("OPMETER_X_S", "1e-3", 7), 0.001);
  EXPECT_DOUBLE_EQ(seconds_setting("OPMETER_X_S", nullptr, 7), 7);
  EXPECT_DOUBLE_EQ(seconds_setting("OPMETER_X_S", "", 7), 7);
}

TEST(EnvSeconds, AnythingButAFiniteNumberAboveZeroIsRefusedNamingTheSetting) {
  for (const char* bad : {"0", "-0", "-3", "soon", "5s", "5 ", "inf", "-inf", "nan", "1e999"})
    EXPECT_EQ(refusal(bad), fmt::format("OPMETER_X_S={} must be a number of seconds > 0", bad)) << bad;
}

TEST(EnvSeconds, ReadsTheProcessEnvironment) {
  setenv("OPMETER_TEST_ENV_SECONDS", "12", 1);
  EXPECT_DOUBLE_EQ(env_seconds("OPMETER_TEST_ENV_SECONDS", 1), 12);
  unsetenv("OPMETER_TEST_ENV_SECONDS");
  EXPECT_DOUBLE_EQ(env_seconds("OPMETER_TEST_ENV_SECONDS", 1), 1);
}

// As rank 0 of a one-rank OpenMPI launch (its variables, no mpirun needed): the wait is read
// before MPI starts, so the run ends at once with the usage error.
TEST(EnvSeconds, ABadRankWaitEndsALaunchedRunWithExit2) {
  if (!Registry::global().impl("collective", "mpi")) GTEST_SKIP() << "built without MPI: no collective impl";
  auto dir = temp_dir("rank_wait_s");
  write(dir, "coll.yaml", "ops: [collective]\nimpls: [mpi]\ndtypes: [fp32]\nkind: [allreduce]\nbytes: [64]\n");
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  setenv("OPMETER_RANK_WAIT_S", "-1", 1);
  Output out = cli("run " + (dir / "coll.yaml").string() + " --out " + (dir / "out").string() + " --no-report");
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OPMETER_RANK_WAIT_S"}) unsetenv(v);
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("opmeter: error: OPMETER_RANK_WAIT_S=-1 must be a number of seconds > 0"), std::string::npos)
      << out.text;
  fs::remove_all(dir);
}
