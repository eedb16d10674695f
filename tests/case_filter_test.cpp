// --filter: matched anywhere in the case string, anchors and alternation as users write them, a
// bad pattern or a lookaround refused with the flag's name, and a pattern that makes a backtracking engine run for
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

// Lookaround, which RE2 lacks, is refused (a backtracking engine would hang on a user's pattern),
// with the --exclude that does the work of a closing negative lookahead.
TEST(CaseFilter, LookaroundIsRefusedPointingAtExclude) {
  try {
    CaseFilter("^(?!attention/onednn_unfused/.*causal=1)");
    ADD_FAILURE() << "a lookahead was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lookaround"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("here --exclude '^attention/onednn_unfused/.*causal=1'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(CaseFilter("(?=g)(.*.*)*X"), UsageError);
  EXPECT_THROW(CaseFilter("a(?<=a)"), UsageError);
  EXPECT_THROW(CaseFilter("(a)\\1"), UsageError);  // a backreference
  EXPECT_EQ(exclude_instead("^[^/]+/(?!torch_compile)"), "--filter '^[^/]+/' --exclude '^[^/]+/torch_compile'");
  EXPECT_EQ(exclude_instead("(?!x)"), "--exclude 'x'");
  EXPECT_EQ(exclude_instead("^a(?!b)c"), "");      // something follows the lookahead
  EXPECT_EQ(exclude_instead("^a(?=b)"), "");       // positive: no exclusion does it
  EXPECT_EQ(exclude_instead("^a(?!b(?!c))"), "");  // nested
}

TEST(CaseFilter, ASelectionIsTheFilterLessTheExclusion) {
  EXPECT_FALSE(CaseSelection::make("", "").has_value());
  const auto s = CaseSelection::make("onednn", "^layernorm/");
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->matches("gelu/onednn/fp32/batch=1/threads=1"));
  EXPECT_FALSE(s->matches("layernorm/onednn/fp32/batch=1/threads=1"));
  EXPECT_FALSE(s->matches("gelu/opmeter/fp32/batch=1/threads=1"));
  const auto only_exclude = CaseSelection::make("", "torch_compile");
  EXPECT_TRUE(only_exclude->matches("gelu/torch/fp32/batch=1/threads=1"));
  EXPECT_FALSE(only_exclude->matches("gelu/torch_compile/fp32/batch=1/threads=1"));
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
