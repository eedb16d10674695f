// The two CLI modes the tested docs rely on (tests/docs/): `--parse-only` checks a command line and
// does nothing else; `list --format md` writes the guide's ops page from the registry alone.
#include <gtest/gtest.h>

#include "tests/cli_helpers.hpp"

TEST(CliParseOnly, AcceptsAGoodCommandLineAndDoesNothing) {
  auto dir = temp_dir("parse_only");
  auto out = cli("--parse-only calibrate --quick --out " + (dir / "cal.json").string());
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(fs::exists(dir / "cal.json")) << "a parse-only calibrate wrote a profile";
  EXPECT_TRUE(out.text.empty()) << out.text;
}

TEST(CliParseOnly, RefusesABadCommandLineWithExitCode2) {
  auto out = cli("--parse-only predict fit --folds 1 results/ -o model.json");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("--folds"), std::string::npos) << out.text;
  out = cli("--parse-only run --no-such-flag");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("no-such-flag"), std::string::npos) << out.text;
}

TEST(CliListMarkdown, ListsEveryOpAndImplWithoutThisMachinesAvailability) {
  auto out = cli("list --format md");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.rfind("# Ops and impls\n", 0), 0u) << out.text.substr(0, 200);
  for (auto* want : {"\n## gemm\n", "| `onednn` | cpu |", "| `cublaslt` | cuda |", "(runs when named)", "| `resnet50` |"})
    EXPECT_NE(out.text.find(want), std::string::npos) << want;
  EXPECT_EQ(out.text.find("unavailable"), std::string::npos) << "the page must not depend on this machine";
  EXPECT_EQ(cli("list --format xml").code, 2);
}
