// Metrics without a field of their own: each output carries them, and they read back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "opmeter/errors.hpp"
#include "report/reporters.hpp"
#include "opmeter/result_fields.hpp"
#include "results/result_set.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;

namespace {

Result with_metrics() {
  auto r = fixtures::measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=1", 2e-6, fixtures::gemm_work(64, 64, 64));
  r.timestamp = "2026-11-22T10:00:00Z";
  r.set_metric("sm_clock", {1755, "MHz", Better::higher, MetricFormat::integer});
  r.set_metric("l2_hit", {93.3, "%", Better::higher, MetricFormat::percent});
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST(ResultMetrics, JournalRecordKeepsValueAndHints) {
  auto j = to_json(with_metrics());
  ASSERT_TRUE(j.contains("metrics"));
  EXPECT_EQ(j["metrics"]["sm_clock"]["value"], 1755.0);
  EXPECT_EQ(j["metrics"]["sm_clock"]["unit"], "MHz");
  EXPECT_EQ(j["metrics"]["sm_clock"]["better"], "higher");
  EXPECT_EQ(j["metrics"]["sm_clock"]["format"], "integer");
  auto back = result_from_json(j);
  ASSERT_EQ(back.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(back.metrics.at("l2_hit").value, 93.3);
  EXPECT_EQ(back.metrics.at("l2_hit").format, MetricFormat::percent);
  EXPECT_EQ(back.metrics.at("l2_hit").better, Better::higher);
  EXPECT_FALSE(to_json(fixtures::measured("gemm/onednn/fp32/M=8,N=8,K=8/threads=1", 1e-6)).contains("metrics"));
}

TEST(ResultMetrics, GoogleBenchmarkEntryHasThemAsCounters) {
  auto j = gbench_json(nlohmann::json::object(), {with_metrics()});
  auto& e = j["benchmarks"][0];
  EXPECT_EQ(e["sm_clock"], 1755.0);  // a counter, as Google Benchmark's tools read them
  EXPECT_EQ(e["metrics"]["l2_hit"]["unit"], "%");
  auto back = result_from_gbench(e);
  EXPECT_DOUBLE_EQ(back.metrics.at("sm_clock").value, 1755);
  EXPECT_EQ(back.metrics.at("sm_clock").unit, "MHz");
}

TEST(ResultMetrics, CsvHasAColumnPerMetricAfterTheFields) {
  auto plain = fixtures::measured("gemm/onednn/fp32/M=8,N=8,K=8/threads=1", 1e-6);
  auto csv = lines(csv_table(nlohmann::json::object(), {with_metrics(), plain}));
  ASSERT_EQ(csv.size(), 3u);
  auto fixed = lines(csv_table(nlohmann::json::object(), {plain}))[0];
  EXPECT_EQ(csv[0], fixed + ",l2_hit,sm_clock");
  EXPECT_EQ(csv[1].substr(csv[1].size() - std::string(",93.3,1755").size()), ",93.3,1755") << csv[1];
  EXPECT_EQ(csv[2].substr(csv[2].size() - 2), ",,") << csv[2];  // no metrics: empty cells
}

TEST(ResultMetrics, MarkdownShowsThemByTheirFormat) {
  auto md = markdown_table({with_metrics(), fixtures::measured("gemm/onednn/fp32/M=8,N=8,K=8/threads=1", 1e-6)});
  EXPECT_NE(md.find("| status | l2_hit | sm_clock (MHz) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 93.3% | 1755 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| - | - |"), std::string::npos) << md;
}

TEST(ResultMetrics, NamesMayNotShadowFields) {
  Result r;
  EXPECT_THROW(r.set_metric("gflops", {1.0}), std::invalid_argument);
  EXPECT_THROW(r.set_metric("iterations", {1.0}), std::invalid_argument);  // a results.json key
  EXPECT_THROW(r.set_metric("elapsed_s", {1.0}), std::invalid_argument);   // a CSV column
  EXPECT_THROW(r.set_metric("a b", {1.0}), std::invalid_argument);
  EXPECT_THROW(r.set_metric("", {1.0}), std::invalid_argument);
  EXPECT_NO_THROW(r.set_metric("dram.read_gbps", {1.0}));
}

TEST(ResultMetrics, MalformedMetricIsAUsageError) {
  auto j = to_json(with_metrics());
  j["metrics"]["sm_clock"]["format"] = "sparkles";
  EXPECT_THROW(result_from_json(j), UsageError);
  j = to_json(with_metrics());
  j["metrics"]["sm_clock"] = "fast";
  EXPECT_THROW(result_from_json(j), UsageError);
}

TEST(ResultMetrics, ResultsDirectoryReadsThemBack) {
  auto dir = std::filesystem::temp_directory_path() / "opmeter_metrics_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "results.json") << gbench_json(nlohmann::json::object(), {with_metrics()}).dump(2);
  std::ofstream(dir / "results.jsonl") << to_json(with_metrics()).dump() << "\n";
  auto set = load_results(dir.string());
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_EQ(set.format, ResultsFormat::results_json);
  EXPECT_EQ(set.results[0].metrics.at("sm_clock").unit, "MHz");
  auto journal = read_jsonl((dir / "results.jsonl").string());
  EXPECT_DOUBLE_EQ(journal[0].metrics.at("l2_hit").value, 93.3);
  std::filesystem::remove_all(dir);
}
