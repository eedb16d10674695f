// The CLI end to end, through a binary that also holds the test-only impls.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <random>

#include "opmeter/stats.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/onednn_caps.hpp"

namespace fs = std::filesystem;

namespace {
const char* kTinyConfig = R"(ops: [gemm, bandwidth]
impls: [onednn, reference]
dtypes: [fp32]
threads: 1
stopping: {samples: 3, warmup: 1}
bandwidth: {kernels: [copy], sizes_mib: [1]}
shapes:
  - name: custom
    shapes: [[32, 16, 8]]
)";
}  // namespace

TEST(Cli, TinyConfigEndToEnd) {
  auto dir = temp_dir("tiny");
  auto cfg = write(dir, "tiny.yaml", kTinyConfig);
  auto out = cli("run " + cfg.string() + " --out " + (dir / "res").string());
  ASSERT_EQ(out.code, 0) << out.text;
  // 2 gemm + 1 bandwidth + 1 peak added for % of peak.
  EXPECT_NE(out.text.find("4 cases from " + cfg.string()), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("| gemm | onednn | fp32 | M=32,N=8,K=16 |"), std::string::npos) << out.text;
  for (const char* f : {"results.json", "results.csv", "results.md", "results.jsonl", "report.html", "report.md"})
    EXPECT_TRUE(fs::exists(dir / "res" / f)) << f;
  auto j = nlohmann::json::parse(std::ifstream(dir / "res" / "results.json"));
  EXPECT_TRUE(j["context"].contains("cpu"));
  EXPECT_EQ(j["context"]["run"]["source"], cfg.string());  // the run settings travel with the results
  EXPECT_EQ(j["context"]["run"]["stopping"]["fixed_samples"], 3);
  int iterations = 0;
  for (auto& b : j["benchmarks"])
    if (b["run_type"] == "iteration") {
      ++iterations;
      EXPECT_EQ(b["status"], "ok") << b["name"];
    }
  EXPECT_EQ(iterations, 4);
  auto results = opmeter::read_jsonl((dir / "res" / "results.jsonl").string());
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].kase.op, "peak");
  EXPECT_TRUE(results[1].pct_peak.has_value() || results[2].pct_peak.has_value());
}

TEST(Cli, CaseStringRerunsExactlyThatCase) {
  auto dir = temp_dir("case");
  auto out = cli("run --case gemm/onednn/fp32/M=32,N=8,K=16/threads=1 --samples 3 --out " + dir.string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto results = opmeter::read_jsonl((dir / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].case_string, "gemm/onednn/fp32/M=32,N=8,K=16/threads=1");
  EXPECT_EQ(results[0].samples.size(), 3u);
}

// One case is "1 case", not "1 cases": the run's line, report.md, compare's summary and its document.
TEST(Cli, OneCaseIsSingular) {
  auto dir = temp_dir("cli_one_case");
  auto out = cli("run --case gemm/onednn/fp32/M=32,N=8,K=16/threads=1 --samples 3 --out " + (dir / "a").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("opmeter: 1 case from case -> "), std::string::npos) << out.text;
  std::stringstream report;
  report << std::ifstream(dir / "a" / "report.md").rdbuf();
  EXPECT_NE(report.str().find("\n1 case: 1 ok."), std::string::npos) << report.str();
  EXPECT_NE(report.str().find(", 1 case\n"), std::string::npos) << report.str();
  EXPECT_EQ(report.str().find("1 cases"), std::string::npos) << report.str();
  auto dry = cli("run --case gemm/onednn/fp32/M=32,N=8,K=16/threads=1 --dry-run");
  EXPECT_NE(dry.text.find("1 case from case\n"), std::string::npos) << dry.text;
  auto cmp = cli("compare " + (dir / "a").string() + " " + (dir / "a").string());
  EXPECT_NE(cmp.text.find("opmeter: pass: 1 case, geomean time"), std::string::npos) << cmp.text;
  EXPECT_NE(cmp.text.find("**PASS**: 1 case compared"), std::string::npos) << cmp.text;
  EXPECT_EQ(cmp.text.find("1 cases"), std::string::npos) << cmp.text;
}

// --profile measures as usual (torchao's enable_profiler keeps its repeats), then runs one more
// untimed sample in the capture range, which the details say and the samples do not hold.
TEST(Cli, ProfileKeepsTheMeasurementAndAddsOneUntimedSample) {
  auto dir = temp_dir("cli_profile");
  auto out = cli("run --case gemm/onednn/fp32/M=32,N=8,K=16/threads=1 --samples 7 --profile --no-report --out " +
                 dir.string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto results = opmeter::read_jsonl((dir / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].samples.size(), 7u);
  EXPECT_NE(results[0].details["profiled"].find("not in the results"), std::string::npos) << results[0].details["profiled"];
  EXPECT_EQ(out.text.find("inf%"), std::string::npos) << out.text;
}

// One sample has no spread (nor have up to 5 an interval of the median): the tables say "-", the
// JSON null, never "inf%" or a perfect ±0.00%.
TEST(Cli, ASingleSampleHasNoSpread) {
  auto dir = temp_dir("cli_one_sample");
  auto out = cli("run --case gemm/onednn/fp32/M=32,N=8,K=16/threads=1 --samples 1 --format json,md --out " + dir.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("inf"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find("0.00%"), std::string::npos) << out.text;
  const auto line =
      out.text.substr(out.text.find("[1/1]"), out.text.find('\n', out.text.find("[1/1]")) - out.text.find("[1/1]"));
  EXPECT_EQ(line.find("±"), std::string::npos) << line;  // the console's line has no ± at all
  auto j = nlohmann::json::parse(std::ifstream(dir / "results.json"));
  ASSERT_FALSE(j["benchmarks"].empty());
  const auto& first = j["benchmarks"][0];  // the case's own entry (Google Benchmark's aggregates follow)
  EXPECT_TRUE(first.value("precision", nlohmann::json()).is_null()) << first.dump();  // left out, or null
  EXPECT_TRUE(first.value("noise", nlohmann::json()).is_null()) << first.dump();
  EXPECT_EQ(first["samples"], 1);
  out = cli("run --case gemm/onednn/fp32/M=32,N=8,K=16/threads=1 --samples 3 --no-report --out " + (dir / "three").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("±-"), std::string::npos) << out.text;
}

// report, compare and predict fit refuse to write over what they read: an input file, or the
// results files of an input directory (report.html beside them is fine).
TEST(Cli, OutputsNeverOverwriteTheirInputs) {
  auto dir = temp_dir("cli_not_input");
  const auto res = dir / "res";
  auto out = cli("run --case gemm/onednn/fp32/M=32,N=8,K=16/threads=1 --samples 3 --no-report --out " + res.string());
  ASSERT_EQ(out.code, 0) << out.text;
  const std::string journal = (res / "results.jsonl").string();
  const auto before = std::filesystem::file_size(journal);
  for (const std::string& command :
       {"report " + res.string() + " -o " + journal, "report " + res.string() + " -o " + (res / "results.json").string(),
        "compare " + res.string() + " " + res.string() + " -o " + journal,
        "report " + journal + " -o " + (dir / "r.html").string() + " --md " + journal,
        "report " + res.string() + " -o " + (dir / "same").string() + " --md " + (dir / "same").string()}) {
    out = cli(command);
    EXPECT_EQ(out.code, 2) << command << "\n" << out.text;
    EXPECT_NE(out.text.find("write the output elsewhere"), std::string::npos) << command << "\n" << out.text;
  }
  EXPECT_EQ(std::filesystem::file_size(journal), before);
  // A copy of a run is not a second run: compare says so.
  std::filesystem::create_directories(dir / "copy");
  std::filesystem::copy_file(journal, dir / "copy" / "results.jsonl");
  out = cli("compare " + res.string() + " " + (dir / "copy").string());
  EXPECT_NE(out.text.find("BASE and NEW hold the very same samples"), std::string::npos) << out.text;
  out = cli("report " + journal + " -o " + (res / "pipelines.json").string() + " --no-md");  // read beside a file input
  EXPECT_EQ(out.code, 2) << out.text;
  out = cli("report " + res.string() + " -o " + (res / "report.html").string());
  EXPECT_EQ(out.code, 0) << out.text;
  // -o /dev/stdout writes into the command's standard output; /dev/stdout stays what it was.
  out = cli("report " + res.string() + " -o /dev/stdout --no-md");
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("<html"), std::string::npos) << out.text.substr(0, 300);
  EXPECT_TRUE(std::filesystem::is_symlink("/dev/stdout") || std::filesystem::is_character_file("/dev/stdout"));
}

// --resume DIR with a config continues DIR's run only if that config is what DIR measured.
TEST(Cli, ResumeWithAnotherPlanIsRefused) {
  auto dir = temp_dir("cli_resume_other");
  const auto res = dir / "res";
  const std::string kase = "gemm/onednn/fp32/M=32,N=8,K=16/threads=1";
  auto out = cli("run --case " + kase + " --samples 3 --no-report --out " + res.string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto cfg = write(dir, "other.yaml", "ops: [add]\nimpls: [opmeter]\nbatch: [1]\nseq: [4]\nhidden: [64]\nthreads: [1]\n");
  out = cli("run " + cfg.string() + " --samples 3 --resume " + res.string());
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("it holds a run of case " + kase + ", not of config "), std::string::npos) << out.text;
  EXPECT_EQ(opmeter::read_jsonl((res / "results.jsonl").string()).size(), 1u);
  out = cli("run --case " + kase + " --samples 3 --resume " + res.string());  // the same run: nothing left to do
  EXPECT_EQ(out.code, 0) << out.text;
  // One config however its path is written.
  const auto res2 = dir / "res2";
  out = cli("run " + cfg.string() + " --samples 3 --no-report --out " + res2.string());
  ASSERT_EQ(out.code, 0) << out.text;
  std::filesystem::create_symlink(cfg, dir / "link.yaml");
  for (auto other : {(dir / "." / "other.yaml").string(), (dir / "link.yaml").string()}) {
    out = cli("run " + other + " --samples 3 --no-report --resume " + res2.string());
    EXPECT_EQ(out.code, 0) << other << "\n" << out.text;
  }
}

TEST(Cli, BadInputExitsTwoWithMessage) {
  auto dir = temp_dir("bad");
  auto cfg = write(dir, "bad.yaml", "ops: [gemm]\nthread: 2\nshapes: [{name: pow2}]\n");
  auto out = cli("run " + cfg.string());
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find(cfg.string() + ":2:1: unknown key 'thread' in the config; did you mean 'threads'?"),
            std::string::npos) << out.text;
  EXPECT_EQ(out.text.find("terminate"), std::string::npos);

  out = cli("run /nonexistent.yaml");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("cannot open the config file"), std::string::npos) << out.text;

  out = cli("run --case gemm/onednn/fp32/M=-1,N=8,K=8/threads=1");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("M=-1 out of range"), std::string::npos) << out.text;

  out = cli("run --suite quick --filter '('");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("not a valid regular expression"), std::string::npos) << out.text;

  out = cli("run --suite quick --filter nothing-matches-this");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("matches none of the"), std::string::npos) << out.text;

  out = cli("run --suite nope");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("unknown suite 'nope'"), std::string::npos) << out.text;

  out = cli("run --threads 0");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("--threads"), std::string::npos) << out.text;

  out = cli("frobnicate");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("unknown command 'frobnicate'; known: run, check"), std::string::npos) << out.text;
  out = cli("rum");
  EXPECT_NE(out.text.find("unknown command 'rum'; did you mean 'run'?"), std::string::npos) << out.text;

  out = cli("run --resume /nonexistent-dir");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("no such results directory"), std::string::npos) << out.text;

  // A second YAML document is not ignored; a device is not read without end; --case takes no
  // --pipeline beside it (it would drop the pipeline).
  auto two = write(dir, "two.yaml", "ops: [add]\n---\nops: [gemm]\n");
  out = cli("run " + two.string() + " --dry-run");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find(two.string() + ":3:1: the file holds 2 YAML documents"), std::string::npos) << out.text;
  out = cli("run /dev/zero --dry-run");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("/dev/zero: holds more than 16 MiB"), std::string::npos) << out.text;
  for (auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"run --suite '' --dry-run", "--suite: must not be empty"},
           {"run --format '' --dry-run", "--format: must not be empty"},
           {"run --seed 99999999999999999999 --dry-run", "--seed: is too large"}}) {
    out = cli(args);
    EXPECT_EQ(out.code, 2) << args << "\n" << out.text;
    EXPECT_NE(out.text.find(says), std::string::npos) << args << "\n" << out.text;
  }
  out = cli("run --case add/opmeter/fp32/batch=1,seq=4,hidden=64/threads=1 --pipeline resnet18 --dry-run");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("--case runs one case: give no config, --suite or --pipeline with it"), std::string::npos)
      << out.text;
}

TEST(Cli, FailedCaseDoesNotStopTheRunAndSetsExitCode) {
  auto dir = temp_dir("failed");
  auto cfg = write(dir, "c.yaml", R"(ops: [gemm]
impls: [test_wrong, reference]
stopping: {samples: 2}
threads: 1
shapes: [{name: custom, shapes: [[8, 8, 8]]}]
)");
  auto out = cli("run " + cfg.string() + " --out " + (dir / "res").string());
  EXPECT_EQ(out.code, 1) << out.text;
  auto results = opmeter::read_jsonl((dir / "res" / "results.jsonl").string());
  ASSERT_EQ(results.size(), 3u);  // peak, test_wrong, reference
  std::map<std::string, opmeter::Status> status;
  for (auto& r : results) status[r.kase.impl] = r.status;
  EXPECT_EQ(status["test_wrong"], opmeter::Status::failed);
  EXPECT_EQ(status["reference"], opmeter::Status::ok);
}

TEST(Cli, ResumeSkipsFinishedCases) {
  auto dir = temp_dir("resume");
  auto cfg = write(dir, "tiny.yaml", kTinyConfig);
  auto res = dir / "res";
  // An interrupted run: only the first case made it into the journal, and a torn line after it.
  auto first = cli("run " + cfg.string() + " --out " + res.string() + " --filter gemm/onednn");
  ASSERT_EQ(first.code, 0) << first.text;
  { std::ofstream(res / "results.jsonl", std::ios::app) << "{\"case\": \"gemm/one"; }
  auto lines_before = opmeter::read_jsonl((res / "results.jsonl").string()).size();
  ASSERT_EQ(lines_before, 2u);  // the onednn gemm and the peak it needs
  // The torn line must go before appending, or it would corrupt the next record: resume rewrites it.
  auto out = cli("run " + cfg.string() + " --resume " + res.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("(2 already done, 2 to run)"), std::string::npos) << out.text;
  auto results = opmeter::read_jsonl((res / "results.jsonl").string());
  EXPECT_EQ(results.size(), 4u);
  auto j = nlohmann::json::parse(std::ifstream(res / "results.json"));
  int iterations = 0;
  for (auto& b : j["benchmarks"]) iterations += b["run_type"] == "iteration";
  EXPECT_EQ(iterations, 4);
}

TEST(Cli, IsolationRecordsCrashAndHangAndGoesOn) {
  auto dir = temp_dir("isolate");
  auto cfg = write(dir, "c.yaml", R"(ops: [gemm]
impls: [test_crash, test_hang, reference]
stopping: {samples: 2, timeout_s: 1}
threads: 1
shapes: [{name: custom, shapes: [[8, 8, 8]]}]
)");
  auto out = cli("run " + cfg.string() + " --isolate --case-deadline 3 --out " + (dir / "res").string());
  EXPECT_EQ(out.code, 1) << out.text;
  auto results = opmeter::read_jsonl((dir / "res" / "results.jsonl").string());
  ASSERT_EQ(results.size(), 4u) << out.text;
  std::map<std::string, opmeter::Result> by_impl;
  for (auto& r : results) by_impl[r.kase.impl] = r;
  EXPECT_EQ(by_impl["test_crash"].status, opmeter::Status::crashed);
  EXPECT_NE(by_impl["test_crash"].reason.find("signal 11"), std::string::npos) << by_impl["test_crash"].reason;
  EXPECT_EQ(by_impl["test_hang"].status, opmeter::Status::timeout);
  EXPECT_NE(by_impl["test_hang"].reason.find("3 s deadline"), std::string::npos) << by_impl["test_hang"].reason;
  EXPECT_EQ(by_impl["reference"].status, opmeter::Status::ok);
  EXPECT_EQ(by_impl["reference"].samples.size(), 2u);
}

TEST(Cli, ListAndInfo) {
  auto list = cli("list");
  ASSERT_EQ(list.code, 0);
  EXPECT_NE(list.text.find("gemm"), std::string::npos);
  EXPECT_NE(list.text.find("openblas"), std::string::npos);
  EXPECT_NE(list.text.find("suites: full, fusion, fusion-gpu, ops, pipeline-quick, quick"), std::string::npos) << list.text;
  // The depthwise-only conv2d impl is probed with a depthwise shape, not shown unavailable for the
  // example's grouped one (issue 27 item 13).
  auto opmeter_conv = list.text.find("opmeter's direct depthwise convolution");
  ASSERT_NE(opmeter_conv, std::string::npos) << list.text;
  const std::string dtypes_line = list.text.substr(opmeter_conv, list.text.find('\n', list.text.find('\n', opmeter_conv) + 1) - opmeter_conv);
  EXPECT_EQ(dtypes_line.find("unavailable"), std::string::npos) << dtypes_line;
  EXPECT_NE(dtypes_line.find("(probed with batch="), std::string::npos) << dtypes_line;
  // oneDNN's bf16 impls show whether this CPU's oneDNN has bf16 (probed here independently), as
  // their cases would be skipped: the list tells what runs here.
  auto onednn_gemm = list.text.find("oneDNN matmul primitive");
  ASSERT_NE(onednn_gemm, std::string::npos) << list.text;
  const std::string gemm_line =
      list.text.substr(onednn_gemm, list.text.find('\n', list.text.find('\n', onednn_gemm) + 1) - onednn_gemm);
  EXPECT_EQ(gemm_line.find("bf16 (unavailable: oneDNN has no bf16 primitives on this CPU") != std::string::npos,
            !opmeter::testing::onednn_has_bf16())
      << gemm_line;
  auto info = cli("info");
  ASSERT_EQ(info.code, 0);
  auto j = nlohmann::json::parse(info.text);
  EXPECT_FALSE(j["cpu"]["model"].get<std::string>().empty());
  EXPECT_TRUE(j["libraries"].contains("onednn"));
  EXPECT_TRUE(j["opmeter"].contains("git_sha"));
}

TEST(Cli, VersionPrintsWhatInfoReports) {
  auto info = cli("info");
  ASSERT_EQ(info.code, 0);
  auto opmeter = nlohmann::json::parse(info.text)["opmeter"];
  auto version = cli("--version");
  EXPECT_EQ(version.code, 0) << version.text;
  EXPECT_EQ(version.text, "opmeter " + opmeter["version"].get<std::string>() + " (git " +
                              opmeter["git_sha"].get<std::string>() + ")\n");
}

// Each flag's help says what the flag does (issue: the probe of the README, items 2 and 10).
TEST(Cli, HelpSaysWhatTheStoppingAndEnergyFlagsDo) {
  auto run = cli("run --help");
  ASSERT_EQ(run.code, 0);
  auto line_of = [](const std::string& text, const std::string& flag) {
    auto at = text.find("\n  " + flag + " ");  // the flag's own line, not a mention in another's help
    if (at == std::string::npos) return std::string();
    ++at;
    auto next_flag = text.find("\n  -", at);  // the help wraps onto the next line
    return text.substr(at, next_flag - at);
  };
  // max_noise bounds the median's precision (the ± column), not stdev/mean (the noise column).
  auto max_noise = line_of(run.text, "--max-noise");
  EXPECT_NE(max_noise.find("median's 95% confidence interval"), std::string::npos) << max_noise;
  EXPECT_EQ(max_noise.find("stdev/mean"), std::string::npos) << max_noise;
  for (const char* flag : {"--min-samples", "--min-time", "--timeout", "--samples"})
    EXPECT_NE(line_of(run.text, flag).find("precision target"), std::string::npos) << line_of(run.text, flag);
  EXPECT_NE(line_of(run.text, "--energy-window").find("RAPL"), std::string::npos)
      << line_of(run.text, "--energy-window");
  EXPECT_NE(line_of(run.text, "--kernel").find("measured as impl NAME"), std::string::npos);
  // check measures nothing: its --kernel is checked.
  auto check = cli("check --help");
  ASSERT_EQ(check.code, 0);
  auto kernel = line_of(check.text, "--kernel");
  EXPECT_NE(kernel.find("checked as impl NAME"), std::string::npos) << kernel;
  EXPECT_EQ(kernel.find("measured"), std::string::npos) << kernel;
}

TEST(Cli, CalibrateWritesAProfileThatRunUses) {
  auto dir = temp_dir("calibrate");
  auto fusion = write(dir, "fusion.yaml",
                      "ops: [linear]\nimpls: [onednn, onednn_unfused]\nbatch: [1]\nseq: [8]\nhidden: [16]\nout: [16]\n"
                      "act: [relu]\nstopping: {samples: 3}\n");
  auto profile = dir / "profile.json";
  auto out =
      cli(fmt::format("calibrate --threads 1 --array-mib 64 --llc-bytes 1048576 --fusion {} --out {} --results {}",
                      fusion.string(), profile.string(), (dir / "raw").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  std::ifstream f(profile);
  auto p = nlohmann::json::parse(f);
  EXPECT_EQ(p["schema"], "opmeter-calibration/1");
  EXPECT_EQ(p["threads"], 1);
  for (auto d : {"fp64", "fp32"}) EXPECT_GT(p["peak_gflops"].value(d, 0.0), 0) << d;
  EXPECT_GT(p["bandwidth"]["memory_gbps"].get<double>(), 0);
  for (auto k : {"copy", "triad", "read", "write"}) EXPECT_GT(p["bandwidth"]["kernels"].value(k, 0.0), 0) << k;
  ASSERT_EQ(p["fusion"]["patterns"].size(), 1u);
  EXPECT_EQ(p["fusion"]["patterns"][0]["pattern"], "linear+bias+relu");
  EXPECT_TRUE(p["context"].contains("host_name"));
  EXPECT_NE(p.value("ceiling_rule", "").find("fastest tenth"), std::string::npos) << p.dump();

  // run --calibration: no ceiling cases are added, and results are placed under the roofline.
  auto run = cli(fmt::format("run --case layernorm/opmeter/fp32/batch=1,seq=4,hidden=1000/threads=1 --samples 3 "
                             "--calibration {} --out {}", profile.string(), (dir / "run").string()));
  ASSERT_EQ(run.code, 0) << run.text;
  EXPECT_EQ(run.text.find("an older profile"), std::string::npos) << run.text;
  auto results = opmeter::read_jsonl((dir / "run" / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].efficiency.has_value());
  EXPECT_TRUE(results[0].pct_bandwidth.has_value());
}

TEST(Cli, AProfileMeasuredUnderContentionIsUsedWithAWarning) {
  auto dir = temp_dir("profile_contended");
  auto profile = write(dir, "calibration.json",
                       R"json({"schema": "opmeter-calibration/1", "threads": 1, "device": "cpu",
                           "ceiling_rule": "rate of the fastest tenth of samples (the median's below 10 samples)",
                           "peak_gflops": {"fp32": 50.0}, "bandwidth": {"memory_gbps": 10.0},
                           "context": {"contended_ceilings": ["peak/opmeter/fp32/kernel=fma/threads=1"]}})json");
  auto out = cli(fmt::format(
      "run --case relu/opmeter/fp32/batch=1,seq=4,hidden=64/threads=1 --calibration {} --dry-run", profile.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("warning: it was measured while other processes took the CPUs, so its ceilings of "
                          "peak/opmeter/fp32/kernel=fma/threads=1 are too low"),
            std::string::npos)
      << out.text;
  EXPECT_EQ(out.text.find("an older profile"), std::string::npos) << out.text;  // it names its ceiling rule
}

TEST(Cli, AProfileOfOtherThreadsLeavesTheRunToMeasureItsOwnCeilings) {
  auto dir = temp_dir("profile_threads");
  auto profile = write(dir, "calibration.json",
                       R"({"schema": "opmeter-calibration/1", "threads": 1, "device": "cpu",
                           "peak_gflops": {"fp32": 50.0}, "bandwidth": {"memory_gbps": 10.0}, "context": {}})");
  auto config_of = [&](int threads) {
    return write(dir, fmt::format("relu{}.yaml", threads),
                 fmt::format("ops: [relu]\nimpls: [opmeter]\ndtypes: [fp32]\nthreads: {}\nbatch: [1]\nseq: [4]\nhidden: [64]\n", threads));
  };
  auto covered = cli(fmt::format("run {} --calibration {} --dry-run", config_of(1).string(), profile.string()));
  ASSERT_EQ(covered.code, 0) << covered.text;
  EXPECT_EQ(covered.text.find("peak/"), std::string::npos) << covered.text;  // the profile holds threads=1's ceilings
  // It names no ceiling rule: written before ceilings were the fastest tenth, its ceilings are medians.
  EXPECT_NE(covered.text.find("an older profile, whose ceilings are their cases' medians"), std::string::npos)
      << covered.text;
  auto other = cli(fmt::format("run {} --calibration {} --dry-run", config_of(2).string(), profile.string()));
  ASSERT_EQ(other.code, 0) << other.text;
  EXPECT_NE(other.text.find("measured with threads=1, and cases run with threads=2"), std::string::npos) << other.text;
  EXPECT_NE(other.text.find("peak/opmeter/fp32/"), std::string::npos) << other.text;
  EXPECT_NE(other.text.find("bandwidth/opmeter/fp32/"), std::string::npos) << other.text;
  // Both thread counts: the profile's own ceilings are not measured again, the others' are.
  auto both = write(dir, "both.yaml", "ops: [relu]\nimpls: [opmeter]\ndtypes: [fp32]\nthreads: [1, 2]\nbatch: [1]\n"
                                      "seq: [4]\nhidden: [64]\n");
  auto mixed = cli(fmt::format("run {} --calibration {} --dry-run", both.string(), profile.string()));
  ASSERT_EQ(mixed.code, 0) << mixed.text;
  EXPECT_NE(mixed.text.find("peak/opmeter/fp32/kernel=fma/threads=2"), std::string::npos) << mixed.text;
  EXPECT_EQ(mixed.text.find("peak/opmeter/fp32/kernel=fma/threads=1"), std::string::npos) << mixed.text;
  EXPECT_NE(mixed.text.find("5 cases from"), std::string::npos) << mixed.text;  // threads=2's three ceilings, two relus
  // A dtype the profile has no peak for: its peak is measured, and the run says why.
  auto fp64 = write(dir, "fp64.yaml",
                    "ops: [gemm]\nimpls: [openblas]\ndtypes: [fp64]\nthreads: 1\n"
                    "shapes:\n  - {name: custom, shapes: [[8, 8, 8]]}\n");
  auto gap = cli(fmt::format("run {} --calibration {} --dry-run", fp64.string(), profile.string()));
  ASSERT_EQ(gap.code, 0) << gap.text;
  EXPECT_NE(gap.text.find("the calibration profile holds no ceiling for peak/opmeter/fp64/kernel=fma/threads=1: the "
                          "run measures it itself"),
            std::string::npos)
      << gap.text;
  // A GPU's profile holds no host ceiling.
  auto gpu = write(dir, "gpu.json",
                   R"({"schema": "opmeter-calibration/1", "threads": 1, "device": "cuda:0",
                       "peak_gflops": {"fp32": 50000.0}, "bandwidth": {"memory_gbps": 3000.0}, "context": {}})");
  auto host = cli(fmt::format("run {} --calibration {} --dry-run", config_of(1).string(), gpu.string()));
  ASSERT_EQ(host.code, 0) << host.text;
  EXPECT_NE(host.text.find("the calibration profile is of cuda:0"), std::string::npos) << host.text;
  EXPECT_NE(host.text.find("peak/opmeter/fp32/"), std::string::npos) << host.text;
}

TEST(Cli, BadCalibrationProfileExitsTwo) {
  auto dir = temp_dir("badprofile");
  auto missing = cli("run --case relu/opmeter/fp32/batch=1,seq=1,hidden=8/threads=1 --calibration /nonexistent.json");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.text.find("cannot open"), std::string::npos) << missing.text;
  auto notjson = write(dir, "x.json", "not json");
  auto bad = cli("run --case relu/opmeter/fp32/batch=1,seq=1,hidden=8/threads=1 --calibration " + notjson.string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("not JSON"), std::string::npos) << bad.text;
  auto other = write(dir, "y.json", "{\"context\": {}}");
  auto wrong = cli("run --case relu/opmeter/fp32/batch=1,seq=1,hidden=8/threads=1 --calibration " + other.string());
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.text.find("not an opmeter calibration profile"), std::string::npos) << wrong.text;
}

// --- report and compare -----------------------------------------------------------------------

namespace {

// A results directory written the way `run` writes it, with chosen medians (+-0.5% noise).
fs::path results_dir(const fs::path& dir, const std::string& name, const std::vector<std::pair<std::string, double>>& cases,
                     const std::string& cpu = "Test CPU") {
  std::vector<opmeter::Result> results;
  unsigned seed = 1;
  for (auto& [c, median] : cases) {
    opmeter::Result r;
    r.kase = opmeter::parse_case(c);
    r.case_string = r.kase.to_string();
    std::mt19937 rng(seed++);
    std::uniform_real_distribution<double> u(-0.005, 0.005);
    for (int i = 0; i < 30; ++i) r.samples.push_back(median * (1 + u(rng)));
    r.summary = opmeter::summarize(r.samples);
    results.push_back(r);
  }
  nlohmann::json context = {{"cpu", {{"model", cpu}}}, {"libraries", {{"onednn", "2.6.3"}}}};
  fs::create_directories(dir / name);
  std::ofstream(dir / name / "results.json") << opmeter::gbench_json(context, results).dump();
  return dir / name;
}

const char* kGemm = "gemm/onednn/fp32/M=256,N=256,K=256/threads=2";
const char* kSilu = "silu/opmeter/fp32/batch=1,seq=256,hidden=1024/threads=2";

}  // namespace

TEST(Cli, ReportWritesHtmlAndMarkdown) {
  auto dir = temp_dir("report");
  auto res = results_dir(dir, "a", {{kGemm, 1e-3}, {kSilu, 2e-4}});
  auto out = cli("report " + res.string() + " -o " + (dir / "r.html").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("2 cases from 1 source -> " + (dir / "r.html").string() + ", " + (dir / "r.md").string()),
            std::string::npos) << out.text;
  std::ifstream html(dir / "r.html"), md(dir / "r.md");
  std::string h((std::istreambuf_iterator<char>(html)), {}), m((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(h.find(kGemm), std::string::npos);
  EXPECT_NE(m.find("# opmeter report"), std::string::npos);

  auto other = results_dir(dir, "b", {{kGemm, 1.1e-3}});
  auto two = cli("report " + res.string() + " " + (other / "results.json").string() + " --no-md -o " + (dir / "two.html").string());
  ASSERT_EQ(two.code, 0) << two.text;
  EXPECT_NE(two.text.find("3 cases from 2 sources"), std::string::npos) << two.text;
  EXPECT_FALSE(fs::exists(dir / "two.md"));
}

TEST(Cli, ReportBadInputsExitTwo) {
  auto dir = temp_dir("report_bad");
  auto missing = cli("report " + (dir / "nothing").string());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.text.find((dir / "nothing").string() + ": no such file or directory"), std::string::npos) << missing.text;
  auto yaml = write(dir, "config.yaml", "ops: [gemm]\n");
  auto not_results = cli("report " + yaml.string());
  EXPECT_EQ(not_results.code, 2);
  EXPECT_NE(not_results.text.find("is not an opmeter results file"), std::string::npos) << not_results.text;
  auto none = cli("report");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.text.find("results is required"), std::string::npos) << none.text;
}

TEST(Cli, CompareExitCodesGateOnConfidentSlowdowns) {
  auto dir = temp_dir("compare");
  auto base = results_dir(dir, "base", {{kGemm, 1e-3}, {kSilu, 2e-4}});
  auto same = results_dir(dir, "same", {{kGemm, 1.001e-3}, {kSilu, 2e-4}});
  auto slow = results_dir(dir, "slow", {{kGemm, 1.10e-3}, {kSilu, 2e-4}});

  auto pass = cli("compare " + base.string() + " " + same.string());
  EXPECT_EQ(pass.code, 0) << pass.text;
  EXPECT_NE(pass.text.find("**PASS**"), std::string::npos) << pass.text;
  EXPECT_NE(pass.text.find("opmeter: pass: 2 cases"), std::string::npos) << pass.text;

  auto fail = cli("compare " + base.string() + " " + slow.string());
  EXPECT_EQ(fail.code, 1) << fail.text;
  EXPECT_NE(fail.text.find("**slower** (fails the gate)"), std::string::npos) << fail.text;
  EXPECT_NE(fail.text.find("1 case(s) fail the gate (--fail-above 5%)"), std::string::npos) << fail.text;

  auto lenient = cli("compare " + base.string() + " " + slow.string() + " --fail-above 15");
  EXPECT_EQ(lenient.code, 0) << lenient.text;

  auto json = cli("compare " + base.string() + " " + slow.string() + " --format json -o " + (dir / "c.json").string());
  EXPECT_EQ(json.code, 1) << json.text;
  auto j = nlohmann::json::parse(std::ifstream(dir / "c.json"));
  EXPECT_EQ(j["gate"], "fail");
  EXPECT_EQ(j["overall"]["slower"], 1);
}

// A NEW run that lost cases BASE measured (it stopped part-way) fails the gate; --allow-missing
// lets a NEW that measured a subset on purpose pass.
TEST(Cli, CompareFailsOnCasesMissingFromNew) {
  auto dir = temp_dir("compare_missing");
  auto base = results_dir(dir, "base", {{kGemm, 1e-3}, {kSilu, 2e-4}});
  auto part = results_dir(dir, "part", {{kGemm, 1e-3}});
  auto lost = cli("compare " + base.string() + " " + part.string());
  EXPECT_EQ(lost.code, 1) << lost.text;
  EXPECT_NE(lost.text.find("opmeter: FAIL: 1 case, "), std::string::npos) << lost.text;
  EXPECT_NE(lost.text.find(", 1 missing from NEW"), std::string::npos) << lost.text;
  auto allowed = cli("compare " + base.string() + " " + part.string() + " --allow-missing");
  EXPECT_EQ(allowed.code, 0) << allowed.text;
  EXPECT_NE(allowed.text.find("(allowed: --allow-missing)"), std::string::npos) << allowed.text;
}

TEST(Cli, CompareWarnsLoudlyWhenMachinesDiffer) {
  auto dir = temp_dir("compare_ctx");
  auto base = results_dir(dir, "base", {{kGemm, 1e-3}});
  auto other = results_dir(dir, "other", {{kGemm, 1e-3}}, "Other CPU");
  auto out = cli("compare " + base.string() + " " + other.string());
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("opmeter: WARNING: cpu.model differs: BASE 'Test CPU', NEW 'Other CPU'"), std::string::npos)
      << out.text;
}

TEST(Cli, CompareBadInputsExitTwo) {
  auto dir = temp_dir("compare_bad");
  auto base = results_dir(dir, "base", {{kGemm, 1e-3}});
  auto missing = cli("compare " + base.string() + " " + (dir / "nope").string());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.text.find("nope: no such file or directory"), std::string::npos) << missing.text;

  // Two files from different formats: results against opmeter's CSV summary.
  std::vector<opmeter::Result> none;
  auto csv = write(dir, "results.csv", opmeter::csv_table(nlohmann::json::object(), none));
  auto mixed = cli("compare " + (base / "results.json").string() + " " + csv.string());
  EXPECT_EQ(mixed.code, 2);
  EXPECT_NE(mixed.text.find("results.csv: is opmeter's CSV summary, which holds medians only"), std::string::npos)
      << mixed.text;

  auto disjoint = results_dir(dir, "disjoint", {{kSilu, 1e-3}});
  auto nothing = cli("compare " + base.string() + " " + disjoint.string());
  EXPECT_EQ(nothing.code, 2);
  EXPECT_NE(nothing.text.find("have no case in common"), std::string::npos) << nothing.text;

  // Measured results stripped of their samples: no test can run on them.
  auto j = nlohmann::json::parse(std::ifstream(base / "results.json"));
  for (auto& b : j["benchmarks"]) b.erase("samples_s");
  fs::create_directories(dir / "stripped");
  std::ofstream(dir / "stripped" / "results.json") << j.dump();
  auto stripped = cli("compare " + base.string() + " " + (dir / "stripped").string());
  EXPECT_EQ(stripped.code, 2) << stripped.text;
  EXPECT_NE(stripped.text.find("stripped: " + std::string(kGemm) + " is ok but has no samples (samples_s stripped?)"),
            std::string::npos)
      << stripped.text;

  // Cases in common, measured on neither side.
  auto skipped = [&](const std::string& name) {
    opmeter::Result r;
    r.kase = opmeter::parse_case(kGemm);
    r.case_string = r.kase.to_string();
    r.status = opmeter::Status::skipped;
    r.reason = "no GPU";
    fs::create_directories(dir / name);
    std::ofstream(dir / name / "results.json") << opmeter::gbench_json(nlohmann::json::object(), {r}).dump();
    return dir / name;
  };
  auto neither = cli("compare " + skipped("s1").string() + " " + skipped("s2").string());
  EXPECT_EQ(neither.code, 2) << neither.text;
  EXPECT_NE(neither.text.find("measured none of their 1 common cases on either side"), std::string::npos)
      << neither.text;

  auto bad_option = cli("compare " + base.string() + " " + base.string() + " --format xml");
  EXPECT_EQ(bad_option.code, 2);

  // NaN passes a range check; every numeric option says it must be finite (issue 27 item 12).
  for (const char* option : {"--threshold nan", "--fail-above nan", "--alpha nan", "--threshold inf"}) {
    auto out = cli("compare " + base.string() + " " + base.string() + " " + option);
    EXPECT_EQ(out.code, 2) << option << "\n" << out.text;
    EXPECT_NE(out.text.find("must be a finite number"), std::string::npos) << option << "\n" << out.text;
  }
}
