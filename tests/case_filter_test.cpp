// --filter: matched anywhere in the case string, anchors and alternation as users write them, a
// bad pattern refused with the flag's name, and a pattern that makes a backtracking engine run for
// hours answered (a hang here would be this test's timeout).
#include <gtest/gtest.h>

#include <string>

#include "opmeter/errors.hpp"
#include "util/case_filter.hpp"

using namespace opmeter;

TEST(CaseFilter, MatchesAnywhereWithAnchorsAndAlternation) {
  const std::string gemm = "gemm/onednn/fp32/M=32,N=8,K=16/threads=1";
  EXPECT_TRUE(CaseFilter("onednn").matches(gemm));
  EXPECT_FALSE(CaseFilter("^onednn").matches(gemm));
  EXPECT_TRUE(CaseFilter("^gemm/(openblas|onednn)/").matches(gemm));
  EXPECT_TRUE(CaseFilter("M=32,N=8").matches(gemm));
  EXPECT_FALSE(CaseFilter("threads=2$").matches(gemm));
  EXPECT_TRUE(CaseFilter("^[^/]+/onednn/fp(32|64)/").matches(gemm));
}

// Lookaround and backreferences, which RE2 lacks, still filter (on a backtracking engine).
TEST(CaseFilter, LookaroundStillFilters) {
  const CaseFilter except("^(?!attention/onednn_unfused/.*causal=1)");
  EXPECT_FALSE(except.linear_time());
  EXPECT_FALSE(except.matches("attention/onednn_unfused/bf16/batch=1,causal=1/threads=2"));
  EXPECT_TRUE(except.matches("attention/onednn_unfused/bf16/batch=1,causal=0/threads=2"));
  EXPECT_TRUE(except.matches("attention/opmeter/bf16/batch=1,causal=1/threads=2"));
  EXPECT_TRUE(CaseFilter("^(.*.*)*zz$").linear_time());
}

TEST(CaseFilter, ABadPatternNamesTheFlag) {
  try {
    CaseFilter("(", "--filter");
    ADD_FAILURE() << "'(' was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--filter '(' is not a valid regular expression: "), std::string::npos) << e.what();
  }
}

TEST(CaseFilter, CatastrophicBacktrackingPatternsAnswer) {
  const std::string long_case(200, 'a');
  EXPECT_FALSE(CaseFilter("^(.*.*)*zz$").matches(long_case));
  EXPECT_TRUE(CaseFilter("^(.*.*)*zz$").matches(long_case + "zz"));
  EXPECT_FALSE(CaseFilter("^(a+)+$").matches(long_case + "b"));
  // Too large for RE2 is refused, not handed to the backtracking engine.
  EXPECT_THROW(CaseFilter("^(.*.*)*z{1001}$"), UsageError);
}
