// `opmeter run --format`: which results files a run writes, chosen by reporter name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"

namespace {

const char* kCase = "--case gemm/reference/fp32/M=8,N=8,K=8/threads=1 --samples 2 --warmup 1";

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != ".opmeter.lock") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(CliFormat, WritesOnlyTheNamedFilesBesideTheJournal) {
  auto dir = temp_dir("format_csv");
  auto out = cli(fmt::format("run {} --format csv --out {}", kCase, (dir / "res").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(files_in(dir / "res"), (std::vector<std::string>{"results.csv", "results.jsonl", "run.json"}));
  EXPECT_NE(out.text.find("(results.csv, results.jsonl)"), std::string::npos) << out.text;
}

TEST(CliFormat, GbenchIsResultsJsonAndNamesCombine) {
  auto dir = temp_dir("format_gbench");
  auto out = cli(fmt::format("run {} --format 'gbench, md,json' --out {}", kCase, (dir / "res").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(files_in(dir / "res"),
            (std::vector<std::string>{"results.json", "results.jsonl", "results.md", "run.json"}));
  // What was written reads back as before.
  out = cli(fmt::format("report {} -o {}", (dir / "res").string(), (dir / "r.html").string()));
  EXPECT_EQ(out.code, 0) << out.text;
}

TEST(CliFormat, DefaultIsEveryFileAndHtmlIsTheReport) {
  auto dir = temp_dir("format_default");
  auto out = cli(fmt::format("run {} --out {}", kCase, (dir / "a").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(files_in(dir / "a"), (std::vector<std::string>{"report.html", "report.md", "results.csv", "results.json",
                                                           "results.jsonl", "results.md", "run.json"}));
  out = cli(fmt::format("run {} --format html --out {}", kCase, (dir / "b").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(files_in(dir / "b"), (std::vector<std::string>{"report.html", "report.md", "results.jsonl", "run.json"}));
}

// A table's CSV asked for by name, in a run without its rows: not written, and said so.
TEST(CliFormat, ATableAskedForWithoutRowsIsSaidSo) {
  auto dir = temp_dir("format_tables");
  auto out = cli(fmt::format("run {} --format training,quantization,csv --out {}", kCase, (dir / "res").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(files_in(dir / "res"), (std::vector<std::string>{"results.csv", "results.jsonl", "run.json"}));
  EXPECT_NE(out.text.find("no training.csv: the run has none of its rows (they come from mode=train cases)"),
            std::string::npos)
      << out.text;
  EXPECT_NE(out.text.find("no quantization.csv: the run has none of its rows (they come from quant= cases)"),
            std::string::npos)
      << out.text;
  out = cli(fmt::format("run {} --out {}", kCase, (dir / "default").string()));  // not asked for: no word
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("no training.csv"), std::string::npos) << out.text;
}

TEST(CliFormat, UnknownNameExitsTwoListingTheKnownOnes) {
  auto dir = temp_dir("format_bad");
  auto out = cli(fmt::format("run {} --format json,xml --out {}", kCase, (dir / "res").string()));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("unknown format 'xml'; known: json or gbench (results.json), csv (results.csv), md "
                          "(results.md), html (report.html, report.md)"),
            std::string::npos)
      << out.text;
  EXPECT_FALSE(fs::exists(dir / "res"));  // refused before anything ran
  out = cli(fmt::format("run {} --format json,,csv --out {}", kCase, (dir / "res").string()));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("an empty name"), std::string::npos) << out.text;
  out = cli(fmt::format("run {} --format html --no-report --out {}", kCase, (dir / "res").string()));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("--no-report"), std::string::npos) << out.text;
}

TEST(CliFormat, ResumeKeepsTheFormats) {
  auto dir = temp_dir("format_resume");
  auto res = (dir / "res").string();
  auto out = cli(fmt::format("run {} --format csv --out {}", kCase, res));
  ASSERT_EQ(out.code, 0) << out.text;
  out = cli("run --resume " + res);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(fs::exists(dir / "res" / "results.json"));
  auto run = nlohmann::json::parse(std::ifstream(dir / "res" / "run.json"));
  EXPECT_EQ(run["run"]["formats"], "csv");
}
