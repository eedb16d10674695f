// check_case: `opmeter check`'s untimed path through the engine, with run_case's statuses.
#include <gtest/gtest.h>

#include "engine/runner.hpp"

using namespace opmeter;

namespace opmeter::testing {
extern std::size_t counting_gemm_calls;  // tests/test_impls.cpp
}

namespace {
Result check(const std::string& c) { return check_case(parse_case(c), RunOptions{}); }
}  // namespace

TEST(CheckCase, ARightImplPassesAfterOneUntimedCall) {
  const std::size_t before = opmeter::testing::counting_gemm_calls;
  auto r = check("gemm/test_count/fp32/M=37,N=41,K=43/threads=1");
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(opmeter::testing::counting_gemm_calls - before, 1u);  // the verify's call alone
  ASSERT_TRUE(r.max_error && r.tolerance);
  EXPECT_LE(*r.max_error, *r.tolerance);
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(r.calls, 0u);
}

TEST(CheckCase, AWrongOrLazyImplFailsWithItsErrorAboveTolerance) {
  auto r = check("gemm/test_wrong/fp32/M=33,N=17,K=29/threads=1");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.reason.find("wrong result"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.max_error && r.tolerance);
  EXPECT_GT(*r.max_error, *r.tolerance);
  auto lazy = check("gemm/test_lazy/fp32/M=16,N=16,K=16/threads=1");
  EXPECT_EQ(lazy.status, Status::failed);
  EXPECT_NE(lazy.reason.find("C[15,0] was not written"), std::string::npos) << lazy.reason;  // poisoned output
}

TEST(CheckCase, SkipsAndErrorsAsRunCaseGivesThem) {
  for (const char* c : {"gemm/openblas/int8/M=8,N=8,K=8/threads=1", "gemm/reference/fp32/M=4096,N=4096,K=4096/threads=1",
                        "gemm/onednn/fp32/M=1048576,N=1048576,K=1048576/threads=1", "gemm/reference/fp32/M=0,N=8,K=8/threads=1"}) {
    RunOptions timed;
    timed.stopping.fixed_samples = 1;
    timed.energy_window_s = 0;
    auto a = check(c);
    auto b = run_case(parse_case(c), timed);
    EXPECT_EQ(a.status, b.status) << c;
    EXPECT_EQ(a.reason, b.reason) << c;
    EXPECT_NE(a.status, Status::ok) << c;
  }
}

TEST(CheckCase, ACaseThatThrowsIsAnErrorAndTheNextRuns) {
  auto bad = check("gemm/test_throw/fp32/M=8,N=8,K=8/threads=1");
  EXPECT_EQ(bad.status, Status::error);
  EXPECT_EQ(bad.reason, "test: setup went wrong");
  auto next = check("gemm/reference/fp32/M=8,N=8,K=8/threads=1");
  EXPECT_EQ(next.status, Status::ok) << next.reason;
}
