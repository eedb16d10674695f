// `opmeter merge` of sharded check.json files: what it refuses, and how it says so (exit 2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"

namespace {

// A rank directory holding one check.json with `text`.
// (The joined output goes beside root: merge refuses to write inside what it reads.)
fs::path rank_with(const fs::path& root, const std::string& rank, const std::string& text) {
  fs::remove_all(root.string() + "-joined");
  fs::create_directories(root / rank);
  return write(root / rank, "check.json", text);
}

const char* kGoodCase =
    R"({"case":"relu/reference/fp32/n=1000/device=cpu","impl":"reference","op":"relu","dtype":"fp32",)"
    R"("status":"pass","max_error":0,"tolerance":1e-6,"reason":""})";

TEST(CheckJoin, NamesAFileThatIsNotJson) {
  const auto root = temp_dir("join_not_json");
  const auto file = rank_with(root, "rank000-of-2", "{ not json");
  const auto out = cli("merge " + root.string() + " -o " + (root.string() + "-joined"));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find(file.string() + ": not JSON"), std::string::npos) << out.text;
  EXPECT_FALSE(fs::exists(root.string() + "-joined/check.json"));
}

TEST(CheckJoin, NamesAFileOfAnotherSchema) {
  const auto root = temp_dir("join_schema");
  const auto file = rank_with(root, "rank000-of-2", R"({"schema":"opmeter-results/1","cases":[]})");
  const auto out = cli("merge " + root.string() + " -o " + (root.string() + "-joined"));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find(file.string() + ": not a check.json of opmeter check (schema opmeter-check/1)"),
            std::string::npos)
      << out.text;
}

TEST(CheckJoin, NamesACaseThatDoesNotParse) {
  const auto root = temp_dir("join_bad_case");
  const auto file = rank_with(root, "rank000-of-2",
                              R"({"schema":"opmeter-check/1","cases":[{"case":"relu//fp32","status":"pass"}]})");
  const auto out = cli("merge " + root.string() + " -o " + (root.string() + "-joined"));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find(file.string() + ": case 'relu//fp32': "), std::string::npos) << out.text;
}

TEST(CheckJoin, NamesAnUnknownStatus) {
  const auto root = temp_dir("join_bad_status");
  std::string text = std::string(R"({"schema":"opmeter-check/1","cases":[)") + kGoodCase + "]}";
  text.replace(text.find("\"pass\""), 6, "\"great\"");
  const auto file = rank_with(root, "rank001-of-2", text);
  const auto out = cli("merge " + root.string() + " -o " + (root.string() + "-joined"));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find(file.string() + ": case 'relu/reference/fp32/n=1000/device=cpu' has status 'great'"),
            std::string::npos)
      << out.text;
}

TEST(CheckJoin, JoinsTwoRanksAndKeepsEachCasesRank) {
  const auto root = temp_dir("join_two");
  rank_with(root, "rank000-of-2", std::string(R"({"schema":"opmeter-check/1","cases":[)") + kGoodCase + "]}");
  std::string failed = kGoodCase;
  failed.replace(failed.find("n=1000"), 6, "n=7");
  failed.replace(failed.find("\"pass\""), 6, "\"fail\"");
  rank_with(root, "rank001-of-2", std::string(R"({"schema":"opmeter-check/1","cases":[)") + failed + "]}");
  const auto out = cli("merge " + root.string() + " -o " + (root.string() + "-joined"));
  EXPECT_EQ(out.code, 1) << out.text;  // a failed case: check's exit code
  const auto joined = nlohmann::json::parse(slurp(root.string() + "-joined/check.json"));
  ASSERT_EQ(joined.at("cases").size(), 2u);
  EXPECT_EQ(joined["cases"][0].value("machine", ""), "rank000-of-2");
  EXPECT_EQ(joined["cases"][1].value("machine", ""), "rank001-of-2");
  EXPECT_EQ(joined["cases"][1].value("status", ""), "fail");
}

}  // namespace
