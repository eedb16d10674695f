// Results formats: Google Benchmark JSON, tidy CSV, JSON lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "opmeter/errors.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"

using namespace opmeter;

namespace {
Result sample_result() {
  Result r;
  r.kase = parse_case("gemm/onednn/fp32/M=64,N=32,K=16/threads=2");
  r.case_string = r.kase.to_string();
  r.samples = {2e-6, 3e-6, 4e-6};
  r.summary = summarize(r.samples);
  r.calls = 300;
  r.batch = 100;
  r.work = {2.0 * 64 * 32 * 16, 4.0 * (64 * 16 + 16 * 32), 4.0 * 64 * 32};
  r.timestamp = "2026-11-22T10:00:00Z";
  derive_rates(r);
  apply_peak(r, 100);
  r.details = {{"onednn_impl", "brg:avx512_core"}};
  return r;
}
Result skipped_result() {
  Result r;
  r.kase = parse_case("gemm/openblas/int8/M=8,N=8,K=8/threads=2");
  r.case_string = r.kase.to_string();
  r.status = Status::skipped;
  r.reason = "openblas has no int8 gemm";
  return r;
}
}  // namespace

TEST(Results, DerivedRates) {
  auto r = sample_result();
  EXPECT_DOUBLE_EQ(r.summary.median, 3e-6);
  EXPECT_NEAR(r.gflops, 65536.0 / 3e-6 * 1e-9, 1e-9);
  // Bytes of the GEMM 64 x 32 x 16 in fp32: A 64 x 16 and B 16 x 32 read, C 64 x 32 written:
  // 4 x (1024 + 512) + 4 x 2048 = 14336 B. Intensity 65536 / 14336 = 32 / 7 flops per byte;
  // 14336 B in the median's 3 us is 4.7787 GB/s.
  EXPECT_NEAR(r.intensity, 32.0 / 7.0, 1e-12);
  EXPECT_NEAR(r.gbps, 14336 / 3e-6 * 1e-9, 1e-9);
  EXPECT_NEAR(r.gbps, 4.7787, 1e-4);
  EXPECT_NEAR(*r.pct_peak, r.gflops, 1e-9);  // peak of 100 GFLOP/s
}

TEST(Results, GoogleBenchmarkJsonSchema) {
  nlohmann::json ctx = {{"date", "x"}, {"num_cpus", 2}};
  auto j = gbench_json(ctx, {sample_result(), skipped_result()});
  ASSERT_TRUE(j.contains("context"));
  ASSERT_TRUE(j["benchmarks"].is_array());
  auto& b = j["benchmarks"][0];
  for (const char* key : {"name", "run_name", "run_type", "iterations", "real_time", "cpu_time", "time_unit", "threads",
                          "repetitions", "family_index", "per_family_instance_index"})
    EXPECT_TRUE(b.contains(key)) << key;
  EXPECT_EQ(b["name"], "gemm/onednn/fp32/M=64,N=32,K=16/threads=2");
  EXPECT_EQ(b["run_type"], "iteration");
  EXPECT_EQ(b["time_unit"], "us");
  EXPECT_DOUBLE_EQ(b["real_time"].get<double>(), 3.0);
  EXPECT_EQ(b["samples_s"].size(), 3u);
  EXPECT_EQ(b["status"], "ok");
  EXPECT_TRUE(b.contains("gflops") && b.contains("gbps") && b.contains("noise") && b.contains("pct_peak"));
  // Aggregates follow the iteration entry, as Google Benchmark writes them.
  EXPECT_EQ(j["benchmarks"][1]["run_type"], "aggregate");
  EXPECT_EQ(j["benchmarks"][2]["aggregate_name"], "median");
  // cv as Google Benchmark defines it: the sample stddev over the mean of 2, 3 and 4 us, 1 / 3.
  ASSERT_EQ(j["benchmarks"][4]["aggregate_name"], "cv");
  EXPECT_NEAR(j["benchmarks"][4]["real_time"].get<double>(), 1.0 / 3, 1e-12);
  EXPECT_NEAR(j["benchmarks"][3]["real_time"].get<double>(), 1.0, 1e-9);  // stddev, 1 us
  auto& skipped = j["benchmarks"].back();
  EXPECT_EQ(skipped["error_occurred"], true);
  EXPECT_EQ(skipped["error_message"], "skipped: openblas has no int8 gemm");
}

TEST(Results, CsvHasSeedColumnsAndOneRowPerCase) {
  nlohmann::json ctx = {{"cpu", {{"model", "Test CPU, 2 cores"}}}};
  auto csv = csv_table(ctx, {sample_result(), skipped_result()});
  std::istringstream in(csv);
  std::string header, row1, row2, extra;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_FALSE(std::getline(in, extra));
  for (const char* col : {"timestamp", "device", "dtype", "M", "N", "K", "iters", "elapsed_s", "tflops", "backend",
                          "gbps", "noise_pct", "pct_peak", "status", "reason", "case"})
    EXPECT_NE(("," + header + ",").find(std::string(",") + col + ","), std::string::npos) << col;
  EXPECT_EQ(row1.rfind("2026-11-22T10:00:00Z,\"Test CPU, 2 cores\",gemm,onednn,fp32,64,32,16,", 0), 0u) << row1;
  EXPECT_NE(row2.find("skipped,,openblas has no int8 gemm"), std::string::npos) << row2;
}

TEST(Results, JsonLinesRoundTripAndTornLastLine) {
  auto path = (std::filesystem::temp_directory_path() / "opmeter_results_test.jsonl").string();
  {
    std::ofstream f(path);
    f << to_json(sample_result()).dump() << "\n" << to_json(skipped_result()).dump() << "\n{\"case\": \"gemm/on";
  }
  auto back = read_jsonl(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].case_string, sample_result().case_string);
  EXPECT_EQ(back[0].samples, sample_result().samples);
  EXPECT_DOUBLE_EQ(back[0].summary.median, 3e-6);
  EXPECT_EQ(back[0].details.at("onednn_impl"), "brg:avx512_core");
  EXPECT_EQ(back[1].status, Status::skipped);
  EXPECT_EQ(back[1].reason, "openblas has no int8 gemm");
  std::filesystem::remove(path);
}

TEST(Results, MalformedJournalIsAUsageError) {
  auto path = (std::filesystem::temp_directory_path() / "opmeter_bad.jsonl").string();
  {
    std::ofstream f(path);
    f << "not json\n" << to_json(skipped_result()).dump() << "\n";
  }
  try {
    read_jsonl(path);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: not a JSON line"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Results, MarkdownTableMarksStatuses) {
  auto r = sample_result();
  r.add_flag("unconverged");
  auto md = markdown_table({r, skipped_result()});
  EXPECT_NE(md.find("| case | impl | dtype | shape | median | ± | GFLOP/s | GB/s | % of peak | % of BW | noise | "
                    "sustained | peak mem | status |"),
            std::string::npos);
  EXPECT_NE(md.find("| 3.00 us |"), std::string::npos) << md;
  EXPECT_NE(md.find("ok, unconverged"), std::string::npos);
  EXPECT_NE(md.find("skipped: openblas has no int8 gemm"), std::string::npos);
  // A cold case's peak memory is mostly the input sets it rotates through: the cell says how many.
  r.peak_memory_bytes = 3 << 20;
  r.copies = 1513;
  EXPECT_NE(markdown_table({r}).find("| 3.00 MiB in 1513 sets |"), std::string::npos) << markdown_table({r});
  r.copies = 1;
  EXPECT_NE(markdown_table({r}).find("| 3.00 MiB |"), std::string::npos) << markdown_table({r});
}

TEST(Results, SustainedTelemetryAndStopReasonRoundTrip) {
  Result r;
  r.kase = parse_case("gemm/cublaslt/bf16/M=64,N=64,K=64/device=cuda:0,hot");
  r.case_string = r.kase.to_string();
  r.work = {2.0 * 64 * 64 * 64, 0, 0};
  r.samples = {1e-6, 1.1e-6, 1.2e-6};
  r.summary = summarize(r.samples);
  r.stop_reason = "plateau";
  r.sustained = Sustained{{2e-6, 2e-6, 2.2e-6}, summarize({2e-6, 2e-6, 2.2e-6})};
  r.telemetry = {{"t_s", {0.0, 0.01}}, {"sm_mhz", {1980, 1755}}, {"power_w", {300, 690}},
                 {"temp_c", {50, 55}}, {"reasons", {0, 4}}};
  derive_rates(r);
  ASSERT_TRUE(r.sustained);
  EXPECT_NEAR(r.sustained->gflops, 2.0 * 64 * 64 * 64 / 2e-6 * 1e-9, 1e-6);
  EXPECT_LT(r.sustained->gflops, r.gflops);
  EXPECT_GT(r.summary.precision, 0);

  auto back = result_from_json(to_json(r));
  EXPECT_EQ(back.stop_reason, "plateau");
  ASSERT_TRUE(back.sustained);
  EXPECT_EQ(back.sustained->samples, r.sustained->samples);
  EXPECT_DOUBLE_EQ(back.sustained->gflops, r.sustained->gflops);
  EXPECT_EQ(back.telemetry, r.telemetry);
  EXPECT_DOUBLE_EQ(back.summary.precision, r.summary.precision);

  auto gb = gbench_json(nlohmann::json::object(), {r});
  auto entry = gb["benchmarks"][0];
  EXPECT_EQ(entry["stop_reason"], "plateau");
  EXPECT_TRUE(entry.contains("sustained"));
  auto from_gb = result_from_gbench(entry);
  ASSERT_TRUE(from_gb.sustained);
  EXPECT_EQ(from_gb.telemetry, r.telemetry);

  auto csv = csv_table(nlohmann::json::object(), {r});
  EXPECT_NE(csv.find("precision_pct,stop_reason,sustained_tflops,sustained_gbps"), std::string::npos);
  EXPECT_NE(csv.find(",plateau,"), std::string::npos);
}

TEST(Results, SustainedRateInTheUnitTheCaseIsReadIn) {
  Result r;
  r.status = Status::ok;
  r.work = {2e9, 1e6, 1e6};  // compute-bound
  r.samples = {1e-3};
  r.summary = summarize(r.samples);
  EXPECT_FALSE(sustained_rate(r));  // no sustained figure (a CPU case)
  r.sustained = Sustained{{2e-3}, summarize({2e-3})};
  derive_rates(r);
  auto s = sustained_rate(r);
  ASSERT_TRUE(s);
  EXPECT_STREQ(s->unit, "GFLOP/s");
  EXPECT_DOUBLE_EQ(s->value, 1000.0);
  r.work = {1e6, 1e9, 1e9};  // memory-bound
  derive_rates(r);
  s = sustained_rate(r);
  ASSERT_TRUE(s);
  EXPECT_STREQ(s->unit, "GB/s");
  EXPECT_DOUBLE_EQ(s->value, 1000.0);
  EXPECT_NE(markdown_table({r}).find("| 1000.0 GB/s |"), std::string::npos);
  r.status = Status::failed;
  EXPECT_FALSE(sustained_rate(r));
}
