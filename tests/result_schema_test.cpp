// The results files, byte for byte: the journal record, results.json, results.csv and the
// markdown table of results that use every field are compared with files recorded from the
// formats as released, so that files written before and after read the same.
// OPMETER_WRITE_GOLDEN=1 rewrites the recorded files (only when a format changes on purpose).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/reporters.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;

namespace {

const std::filesystem::path kGoldenDir = std::filesystem::path(opmeter_source_dir()) / "tests" / "data" / "result_schema";

// A CPU GEMM with every optional field set.
Result cpu_gemm() {
  Result r;
  r.kase = parse_case("gemm/onednn/fp32/M=64,N=32,K=16/threads=2");
  r.case_string = r.kase.to_string();
  r.samples = {2e-6, 3e-6, 4e-6, 3.1e-6, 2.9e-6};
  r.summary = summarize(r.samples);
  r.calls = 500;
  r.batch = 100;
  r.warmup_calls = 40;
  r.copies = 3;
  r.measured_s = 0.0015;
  r.elapsed_s = 0.25;
  r.stop_reason = "converged";
  r.work = {2.0 * 64 * 32 * 16, 4.0 * (64 * 16 + 16 * 32), 4.0 * 64 * 32};
  r.timestamp = "2026-11-22T10:00:00Z";
  derive_rates(r);
  apply_peak(r, 100);
  apply_roofline(r, 50);
  r.max_error = 1.5e-6;
  r.tolerance = 1e-4;
  r.avg_power_w = 35.5;
  r.energy_j = 1.1e-4;
  r.peak_memory_bytes = 3 << 20;
  r.add_flag("unconverged");
  r.details = {{"onednn_impl", "brg:avx512_core"}, {"note", "a, \"quoted\" value"}};
  return r;
}

// A CUDA GEMM with its sustained figure, telemetry and throttled samples.
Result cuda_gemm() {
  Result r;
  r.kase = parse_case("gemm/cublaslt/bf16/M=4096,N=4096,K=4096/device=cuda:0,graph=10");
  r.case_string = r.kase.to_string();
  r.samples = {1.1e-3, 1.2e-3, 1.15e-3};
  r.summary = summarize(r.samples);
  r.calls = 30;
  r.batch = 10;
  r.stop_reason = "plateau";
  r.cache = "hot";
  r.work = {2.0 * 4096 * 4096 * 4096, 2.0 * 2 * 4096 * 4096, 2.0 * 4096 * 4096};
  r.timestamp = "2026-11-22T10:01:00Z";
  r.sustained = Sustained{{1.3e-3, 1.31e-3, 1.29e-3}, summarize({1.3e-3, 1.31e-3, 1.29e-3})};
  r.telemetry = {{"t_s", {0.0, 0.01}}, {"sm_mhz", {1980, 1755}}, {"power_w", {300, 690}}};
  r.throttled_samples = 2;
  r.energy_reason = "window too short";
  r.avg_power_w = 650;
  derive_rates(r);
  apply_peak(r, 900000);
  return r;
}

// A memory-bound case read in GB/s per watt.
Result bandwidth() {
  Result r;
  r.kase = parse_case("bandwidth/opmeter/fp32/kernel=triad,n=1048576/threads=1,hot");
  r.case_string = r.kase.to_string();
  r.samples = {1e-4, 1.1e-4, 0.9e-4};
  r.summary = summarize(r.samples);
  r.calls = 3;
  r.work = {2.0 * 1048576, 8.0 * 1048576, 4.0 * 1048576};
  r.timestamp = "2026-11-22T10:02:00Z";
  r.avg_power_w = 20;
  derive_rates(r);
  return r;
}

Result skipped() {
  Result r;
  r.kase = parse_case("gemm/openblas/int8/M=8,N=8,K=8/threads=2");
  r.case_string = r.kase.to_string();
  r.status = Status::skipped;
  r.reason = "openblas has no int8 gemm, | or | pipes";
  r.timestamp = "2026-11-22T10:03:00Z";
  return r;
}

std::vector<Result> results() { return {cpu_gemm(), cuda_gemm(), bandwidth(), skipped()}; }

nlohmann::json context() {
  return {{"cpu", {{"model", "Test CPU, 2 cores"}}}, {"gpus", {{{"device", "cuda:0"}, {"name", "Test GPU"}}}}};
}

void expect_golden(const std::string& name, const std::string& text) {
  auto path = kGoldenDir / name;
  if (std::getenv("OPMETER_WRITE_GOLDEN")) {
    std::filesystem::create_directories(kGoldenDir);
    std::ofstream(path, std::ios::binary) << text;
  }
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), text) << name;
}

}  // namespace

TEST(ResultSchema, JournalRecordsAreUnchanged) {
  std::string lines;
  for (auto& r : results()) lines += to_json(r).dump() + "\n";
  expect_golden("results.jsonl", lines);
}

TEST(ResultSchema, GoogleBenchmarkJsonIsUnchanged) {
  expect_golden("results.json", gbench_json(context(), results()).dump(2) + "\n");
}

TEST(ResultSchema, CsvIsUnchanged) { expect_golden("results.csv", csv_table(context(), results())); }

TEST(ResultSchema, MarkdownTableIsUnchanged) { expect_golden("results.md", markdown_table(results())); }

TEST(ResultSchema, RecordedFilesReadBackAsWritten) {
  for (auto& r : results()) {
    auto journal = result_from_json(to_json(r));
    EXPECT_EQ(to_json(journal), to_json(r)) << r.case_string;
  }
  auto gb = gbench_json(context(), results());
  std::size_t i = 0;
  for (auto& e : gb["benchmarks"]) {
    if (e["run_type"] != "iteration") continue;
    auto back = result_from_gbench(e);
    EXPECT_EQ(to_json(back), to_json(results()[i])) << e["name"];
    ++i;
  }
  EXPECT_EQ(i, results().size());
}
