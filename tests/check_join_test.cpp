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

// A rank's check.json of a check sharded over `size` ranks: its settings (a filter standing for
// the check's selection), its planned cases and those it holds.
std::string rank_check(int rank, int size, const std::vector<std::string>& planned, std::size_t holds,
                       const std::string& filter = "relu") {
  nlohmann::json cases = nlohmann::json::array(), mine = nlohmann::json::array();
  for (std::size_t i = 0; i < planned.size(); ++i) {
    mine.push_back(planned[i]);
    if (i < holds) cases.push_back({{"case", planned[i]}, {"status", "pass"}, {"reason", ""}});
  }
  nlohmann::json j = {
      {"schema", "opmeter-check/1"},
      {"settings", {{"filter", filter}, {"shard", {{"rank", rank}, {"size", size}, {"split", "ab"}, {"cases", mine}}}}},
      {"context", {{"opmeter", {{"version", "1"}, {"git_sha", "abc"}}}}},
      {"cases", cases}};
  return j.dump();
}

std::string relu(int n) { return "relu/reference/fp32/batch=1,seq=" + std::to_string(n) + ",hidden=8/threads=1"; }

// What merge of results refuses, joining a sharded check's files refuses too, each named (exit 2),
// and nothing is written.
TEST(CheckJoin, RefusesWhatMergeOfResultsRefuses) {
  struct Tree {
    const char* name;
    std::vector<std::pair<std::string, std::string>> ranks;  // directory, check.json
    std::string says;
  };
  const std::vector<Tree> trees = {
      {"missing", {{"rank000-of-2-h-cpu", rank_check(0, 2, {relu(1)}, 1)}}, "rank 1 of 2 is missing"},
      {"mixed",
       {{"rank000-of-2-h-cpu", rank_check(0, 2, {relu(1)}, 1)},
        {"rank001-of-2-h-cpu", rank_check(1, 2, {relu(2)}, 1)},
        {"rank000-of-3-h-cpu", rank_check(0, 3, {relu(3)}, 1, "gemm")}},
       "rank000-of-3-h-cpu ran other settings"},
      {"stopped",
       {{"rank000-of-2-h-cpu", rank_check(0, 2, {relu(1)}, 1)},
        {"rank001-of-2-h-cpu", rank_check(1, 2, {relu(2), relu(3)}, 1)}},
       "rank001-of-2-h-cpu lacks 1 of its 2 planned cases (" + relu(3) + ")"},
  };
  for (auto& t : trees) {
    const auto root = temp_dir(std::string("join_refuses_") + t.name);
    for (auto& [rank, text] : t.ranks) rank_with(root, rank, text);
    const auto out = cli("merge " + root.string() + " -o " + (root.string() + "-joined"));
    EXPECT_EQ(out.code, 2) << t.name << ": " << out.text;
    EXPECT_NE(out.text.find(t.says), std::string::npos) << t.name << ": " << out.text;
    EXPECT_NE(out.text.find("give --force to join them anyway"), std::string::npos) << out.text;
    EXPECT_FALSE(fs::exists(root.string() + "-joined/check.json")) << t.name;
  }
}

TEST(CheckJoin, RefusesAFileGivenTwiceAndAnOutputThatIsNotNew) {
  const auto root = temp_dir("join_twice");
  rank_with(root, "rank000-of-2-h-cpu", rank_check(0, 2, {relu(1)}, 1));
  rank_with(root, "rank001-of-2-h-cpu", rank_check(1, 2, {relu(2)}, 1));
  const fs::path link = root.string() + "-link";
  fs::remove_all(link);
  fs::create_directory_symlink(root, link);
  const std::string joined = root.string() + "-joined";
  auto twice = cli("merge " + root.string() + " " + link.string() + " -o " + joined);
  EXPECT_EQ(twice.code, 2) << twice.text;
  EXPECT_NE(twice.text.find("rank000-of-2-h-cpu is given twice"), std::string::npos) << twice.text;
  EXPECT_FALSE(fs::exists(joined + "/check.json"));
  // A joined check.json already there is not replaced.
  auto first = cli("merge " + root.string() + " -o " + joined);
  ASSERT_EQ(first.code, 0) << first.text;
  const auto before = slurp(joined + "/check.json");
  EXPECT_EQ(nlohmann::json::parse(before)["cases"].size(), 2u);
  write(root / "rank001-of-2-h-cpu", "check.json", rank_check(1, 2, {relu(5)}, 1));
  auto over = cli("merge " + root.string() + " -o " + joined);
  EXPECT_EQ(over.code, 2) << over.text;
  EXPECT_NE(over.text.find("-o " + joined + ": exists and is not empty"), std::string::npos) << over.text;
  EXPECT_EQ(slurp(joined + "/check.json"), before);
  fs::remove_all(link);
}

}  // namespace
