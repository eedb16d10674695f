// calibrate's output: checked before measuring, written only when complete, and an interrupted
// calibration continued by the command it prints. Output paths of every command that writes a file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"
#include "util/output_path.hpp"
#include "opmeter/errors.hpp"

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The ceilings a profile should hold, recomputed from the raw results alone: a case's rate is its
// work (flops, or bytes read + written) over the per-call time of its fastest tenth of samples
// (the ceil(n / 10)-th smallest, nearest rank), or over its median below 10 samples (the rule a
// profile states, kCeilingRule). Peak per dtype: the fastest peak case; memory bandwidth: each DRAM
// kernel's, and the fastest of those moving 64 MiB or more (run's memory ceilings); each cache
// level: its hot read's.
void expect_profile_from_results(const fs::path& profile_path, const fs::path& jsonl) {
  std::map<std::string, nlohmann::json> last;  // by case: a resumed run's record is the last
  std::istringstream lines(slurp(jsonl));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) {
      auto j = nlohmann::json::parse(line);
      last[j["case"].get<std::string>()] = j;
    }
  auto rate = [](const nlohmann::json& j, double work) {
    auto t = j["samples_s"].get<std::vector<double>>();
    std::sort(t.begin(), t.end());
    const double per_call = t.size() < 10 ? j["summary"]["median_s"].get<double>()
                                          : t[static_cast<std::size_t>(std::ceil(t.size() / 10.0)) - 1];
    return work / per_call / 1e9;
  };
  std::map<std::string, double> peak, kernels;
  std::map<double, double> caches;  // array bytes -> read GB/s
  double memory = 0;
  for (auto& [kase, j] : last) {
    if (j["status"] != "ok") continue;
    const auto& w = j["work"];
    if (j["op"] == "peak") {
      double& best = peak[j["dtype"].get<std::string>()];
      best = std::max(best, rate(j, w["flops"].get<double>()));
    } else if (j["op"] == "bandwidth") {
      const double gbps = rate(j, w["bytes_read"].get<double>() + w["bytes_written"].get<double>());
      if (kase.size() > 4 && kase.substr(kase.size() - 4) == ",hot") {  // a cache level's hot read
        const double bytes = std::stod(j["params"]["n"].get<std::string>()) * 4;
        EXPECT_FALSE(caches.count(bytes)) << kase;  // one case per level, told apart by size
        caches[bytes] = gbps;
      } else {
        kernels[j["params"]["kernel"].get<std::string>()] = gbps;
        if (w["bytes_read"].get<double>() + w["bytes_written"].get<double>() >= 64.0 * 1024 * 1024)
          memory = std::max(memory, gbps);
      }
    }
  }
  auto near = [](double got, double want) { return std::fabs(got - want) <= 1e-9 * std::fabs(want); };
  auto p = nlohmann::json::parse(slurp(profile_path));
  ASSERT_EQ(p["peak_gflops"].size(), peak.size()) << p["peak_gflops"].dump();
  for (auto& [dtype, gflops] : peak)
    EXPECT_TRUE(near(p["peak_gflops"][dtype].get<double>(), gflops))
        << dtype << ": " << p["peak_gflops"][dtype] << " vs " << gflops;
  const auto& bw = p["bandwidth"];
  ASSERT_EQ(bw["kernels"].size(), kernels.size()) << bw.dump();
  for (auto& [kernel, gbps] : kernels)
    EXPECT_TRUE(near(bw["kernels"][kernel].get<double>(), gbps))
        << kernel << ": " << bw["kernels"][kernel] << " vs " << gbps;
  EXPECT_TRUE(near(bw["memory_gbps"].get<double>(), memory)) << bw["memory_gbps"] << " vs " << memory;
  ASSERT_EQ(bw["caches"].size(), caches.size()) << bw.dump();
  for (auto& level : bw["caches"]) {
    const double bytes = level["array_bytes"].get<double>();
    ASSERT_TRUE(caches.count(bytes)) << level.dump();
    EXPECT_TRUE(near(level["read_gbps"].get<double>(), caches[bytes])) << level.dump() << " vs " << caches[bytes];
  }
}

std::string usage_error(const std::string& path) {
  try {
    opmeter::check_output_file(path, "--out");
  } catch (const opmeter::UsageError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(OutputPath, DirectoriesMissingFoldersAndUnwritableFoldersAreRefused) {
  auto dir = temp_dir("output_path");
  EXPECT_TRUE(has(usage_error(dir.string()), "is a directory")) << usage_error(dir.string());
  EXPECT_TRUE(has(usage_error((dir / "sub/").string()), "names a directory"));
  EXPECT_TRUE(has(usage_error((dir / "nowhere" / "p.json").string()), "the folder " + (dir / "nowhere").string() + " does not exist"));
  write(dir, "file", "x");
  EXPECT_TRUE(has(usage_error((dir / "file" / "p.json").string()), "is not a folder"));
  EXPECT_TRUE(has(usage_error(""), "empty"));
  EXPECT_EQ(usage_error((dir / "p.json").string()), "no error");
  EXPECT_EQ(usage_error("relative-name.json"), "no error");  // the current folder
}

TEST(OutputPath, EveryCommandThatWritesAFileRefusesADirectoryBeforeWorking) {
  auto dir = temp_dir("output_dir");
  const std::string d = dir.string();
  // calibrate: exit 2 at once, nothing measured (its results directory never made).
  auto cal = cli(fmt::format("calibrate --threads 1 --out {} --results {}", d, (dir / "raw").string()));
  EXPECT_EQ(cal.code, 2) << cal.text;
  EXPECT_TRUE(has(cal.text, "calibrate --out " + d + ": is a directory")) << cal.text;
  EXPECT_FALSE(fs::exists(dir / "raw"));
  for (std::string args : {"report x -o " + d, "report x --md " + d, "compare a b --out " + d, "predict m.json gemm -o " + d,
                           "predict fit r -o " + d, "predict plan m.json c.yaml --budget 60 -o " + d}) {
    auto out = cli(args);
    EXPECT_EQ(out.code, 2) << args << "\n" << out.text;
    EXPECT_TRUE(has(out.text, d + ": is a directory")) << args << "\n" << out.text;
  }
}

TEST(Calibrate, InterruptedLeavesTheProfileAndResumesWithTheCommandItPrints) {
  auto dir = temp_dir("calibrate_int");
  // Each case warms up for 0.3 s, so Ctrl-C lands mid-calibration.
  auto fusion = write(dir, "fusion.yaml",
                      "ops: [linear]\nimpls: [onednn, onednn_unfused]\nbatch: [1]\nseq: [8]\nhidden: [16]\nout: [16]\n"
                      "act: [relu]\nstopping: {samples: 3, warmup_s: 0.3}\n");
  auto profile = write(dir, "profile.json", "{\"a good\": \"profile\"}\n");
  auto raw = dir / "raw";
  auto pid =
      spawn(fmt::format("calibrate --threads 1 --array-mib 32 --llc-bytes 1048576 --fusion {} --out {} --results {}",
                        fusion.string(), profile.string(), raw.string()),
            dir / "log");
  ASSERT_TRUE(wait_until([&] { return line_count(raw / "results.jsonl") >= 2; }, 60)) << slurp(dir / "log");
  kill(-pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(dir / "log");
  EXPECT_EQ(slurp(profile), "{\"a good\": \"profile\"}\n");  // not replaced by a partial one
  EXPECT_FALSE(fs::exists(profile.string() + ".tmp"));
  const std::string log = slurp(dir / "log");
  EXPECT_TRUE(has(log, "no profile written")) << log;
  const std::string advice = "continue with opmeter calibrate --resume " + raw.string();
  auto at = log.find(advice);
  ASSERT_NE(at, std::string::npos) << log;
  auto command = log.substr(at + std::string("continue with opmeter ").size());
  command = command.substr(0, command.find('\n'));
  EXPECT_TRUE(has(command, "--fusion " + fusion.string())) << command;

  auto resumed = cli(command);
  ASSERT_EQ(resumed.code, 0) << command << "\n" << resumed.text;
  EXPECT_TRUE(has(resumed.text, "already done")) << resumed.text;
  EXPECT_FALSE(has(resumed.text, "no fusion pattern measured")) << resumed.text;  // onednn beside onednn_unfused
  auto p = nlohmann::json::parse(slurp(profile));
  EXPECT_EQ(p["schema"], "opmeter-calibration/1");
  EXPECT_GT(p["bandwidth"]["memory_gbps"].get<double>(), 0);
  EXPECT_FALSE(p["bandwidth"]["caches"].empty());
  expect_profile_from_results(profile, raw / "results.jsonl");
}

// With 12 samples a case (>= 10), each ceiling is the rate of its fastest tenth: the 2nd fastest.
TEST(Calibrate, TheProfileIsWhatItsRawResultsSay) {
  auto dir = temp_dir("calibrate_recompute");
  auto fusion = write(dir, "fusion.yaml",
                      "ops: [linear]\nimpls: [onednn]\nbatch: [1]\nseq: [8]\nhidden: [16]\nout: [16]\n"
                      "act: [relu]\nstopping: {samples: 12, warmup: 1, max_noise: 5.0, timeout_s: 0.5}\n");
  auto out = cli(
      fmt::format("calibrate --quick --threads 1 --array-mib 32 --llc-bytes 1048576 --fusion {} --out {} --results {}",
                  fusion.string(), (dir / "profile.json").string(), (dir / "raw").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  expect_profile_from_results(dir / "profile.json", dir / "raw" / "results.jsonl");
  // onednn alone is no fused/unfused pair: said, not left to an empty list in the profile.
  EXPECT_TRUE(has(out.text,
                  "warning: no fusion pattern measured (no fused case ran beside its *_unfused form in "
                  "fp32, the one dtype --quick keeps)"))
      << out.text;
  // --quick doubles the config's 5% target and keeps its 0.5 s timeout (below 2 s).
  auto stopping = nlohmann::json::parse(slurp(dir / "raw" / "run.json"))["run"]["stopping"];
  EXPECT_DOUBLE_EQ(stopping["max_noise_pct"].get<double>(), 10.0) << stopping;
  EXPECT_DOUBLE_EQ(stopping["timeout_s"].get<double>(), 0.5) << stopping;
}

// Under a launcher (here OpenMPI's variables, as mpirun sets them) every rank would write the same
// profile and results directory: each writes its own, named by its rank.
TEST(Calibrate, EachRankOfALaunchWritesItsOwnProfileAndResults) {
  auto dir = temp_dir("calibrate_ranks");
  auto fusion = write(dir, "fusion.yaml",
                      "ops: [linear]\nimpls: [onednn, onednn_unfused]\nbatch: [1]\nseq: [8]\nhidden: [16]\nout: [16]\n"
                      "act: [relu]\nstopping: {samples: 3, warmup: 1}\n");
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  auto out = cli(
      fmt::format("calibrate --quick --threads 1 --array-mib 32 --llc-bytes 1048576 --fusion {} --out {} --results {}",
                  fusion.string(), (dir / "profile.json").string(), (dir / "raw").string()));
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(fs::exists(dir / "profile.json")) << out.text;
  std::vector<std::string> profiles, raws;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("profile.rank001-of-2-", 0) == 0) profiles.push_back(e.path().string());
  for (auto& e : fs::directory_iterator(dir / "raw")) raws.push_back(e.path().filename().string());
  ASSERT_EQ(profiles.size(), 1u) << out.text;
  EXPECT_EQ(profiles[0].substr(profiles[0].size() - 9), "-cpu.json");
  EXPECT_EQ(nlohmann::json::parse(slurp(profiles[0]))["schema"], "opmeter-calibration/1");
  ASSERT_EQ(raws.size(), 1u);
  EXPECT_EQ(raws[0].rfind("rank001-of-2-", 0), 0u);
  EXPECT_TRUE(fs::exists(dir / "raw" / raws[0] / "results.jsonl"));
  // --quick on the default 0.5% and 15 s: 1% and 2 s.
  auto stopping = nlohmann::json::parse(slurp(dir / "raw" / raws[0] / "run.json"))["run"]["stopping"];
  EXPECT_DOUBLE_EQ(stopping["max_noise_pct"].get<double>(), 1.0) << stopping;
  EXPECT_DOUBLE_EQ(stopping["timeout_s"].get<double>(), 2.0) << stopping;
}

// A copy over arrays that fit in a cache measures the cache: refused before anything runs, at the
// 64 MiB run takes a memory ceiling from and at the last-level cache, whichever is larger.
TEST(Calibrate, ArraysThatFitInACacheAreRefusedBeforeMeasuring) {
  auto dir = temp_dir("calibrate_small_arrays");
  struct Row {
    const char* args;
    const char* says;
  };
  for (auto [args, says] :
       {Row{"--array-mib 16 --llc-bytes 1048576",
            "calibrate --array-mib 16: its copy kernel would move 32 MiB, less than the 64 MiB opmeter run takes a "
            "memory ceiling from: that measures a cache, not memory; give --array-mib 32 or more"},
        // Its copy moves 160 MiB, more than the cache; its read kernel streams one array, within it.
        Row{"--array-mib 80 --llc-bytes 134217728",
            "calibrate --array-mib 80: an array of 80 MiB fits in the 128 MiB last-level cache: that measures a "
            "cache, not memory; give --array-mib 128 or more"}}) {
    auto out = cli(fmt::format("calibrate --threads 1 {} --out {} --results {}", args, (dir / "p.json").string(),
                               (dir / "raw").string()));
    EXPECT_EQ(out.code, 2) << out.text;
    EXPECT_TRUE(has(out.text, says)) << out.text;
    EXPECT_FALSE(fs::exists(dir / "raw"));
  }
}

TEST(Calibrate, AFusionConfigOfPipelinesOrOfAnotherDeviceIsRefused) {
  auto dir = temp_dir("calibrate_fusion_config");
  auto pipes = write(dir, "pipes.yaml", "pipelines: [resnet18]\n");
  auto gpu = write(dir, "gpu.yaml", "ops: [linear]\nimpls: [cublaslt, cublaslt_unfused]\ndevice: cuda:0\n");
  for (auto [config, says] : {std::pair{pipes, ": it has pipelines: (opmeter run measures them)"},
                              std::pair{gpu, ": its cases run on cuda:0, and this calibrates cpu"}}) {
    auto out = cli(fmt::format("calibrate --threads 1 --fusion {} --out {} --results {}", config.string(),
                               (dir / "p.json").string(), (dir / "raw").string()));
    EXPECT_EQ(out.code, 2) << out.text;
    EXPECT_TRUE(has(out.text, "calibrate --fusion " + config.string() + says)) << out.text;
    EXPECT_FALSE(fs::exists(dir / "raw"));
  }
}
