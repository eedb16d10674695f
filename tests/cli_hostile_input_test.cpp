// Bad input found by a hostile probe, each path end to end: a clear message and exit code 2, never
// `internal error` (3), a crash or a hang. Stored files (run.json, check.json) are input too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"
#include "util/case_filter.hpp"

namespace {

constexpr const char* kTinyCase = "gemm/reference/fp32/M=16,N=16,K=16/threads=1";

// A results directory of one tiny run, for the tests that then spoil its files.
Output tiny_run(const fs::path& out_dir) {
  return cli(fmt::format("run --case {} --samples 2 --warmup 1 --no-report --out {}", kTinyCase, out_dir.string()));
}

#define EXPECT_BAD_INPUT(out, message)                                             \
  do {                                                                             \
    EXPECT_EQ((out).code, 2) << (out).text;                                        \
    EXPECT_NE((out).text.find(message), std::string::npos) << (out).text;          \
    EXPECT_EQ((out).text.find("internal error"), std::string::npos) << (out).text; \
  } while (0)

// A results directory whose run.json holds `run`.
fs::path results_with(const std::string& name, const nlohmann::json& run) {
  auto dir = temp_dir(name);
  write(dir, "run.json", nlohmann::json{{"run", run}}.dump());
  return dir;
}

}  // namespace

// --resume DIR takes DIR/run.json's values with the ranges and types of their flags: a bad one
// names the file and the key (a stored threads=0 crashed the run; [1,2] as pipelines was a
// json type_error).
TEST(CliHostileInput, ResumeChecksEveryStoredValue) {
  struct Bad {
    nlohmann::json value;
    std::string key, message;
  };
  const std::vector<Bad> bad = {
      {{{"threads", 0}}, "threads", "\"run.threads\" is 0; expected an integer from 1 to 4096, as --threads takes"},
      {{{"threads", -5}}, "threads", "\"run.threads\" is -5; expected an integer from 1 to 4096"},
      {{{"threads", 1e12}}, "threads", "\"run.threads\" is 1000000000000.0; expected an integer from 1 to 4096"},
      {{{"threads", "2"}}, "threads", "\"run.threads\" is \"2\"; expected an integer"},
      {{{"llc_bytes", 5}},
       "llc_bytes",
       "\"run.llc_bytes\" is 5; expected an integer from 65536 to 1099511627776, as --llc-bytes"},
      {{{"seed", -1}}, "seed", "\"run.seed\" is -1; expected an integer from 0"},
      {{{"pipelines", {1, 2}}}, "pipelines", "\"run.pipelines\" is [1,2]; expected a list of strings"},
      {{{"plugins", {5}}}, "plugins", "\"run.plugins\" is [5]; expected a list of strings"},
      {{{"kernels", {{{"a", 1}}}}}, "kernels", "\"run.kernels\" is [{\"a\":1}]; expected a list of strings"},
      {{{"kernels", "k.py"}}, "kernels", "\"run.kernels\" is \"k.py\"; expected a list of strings"},
      {{{"isolate", "yes"}}, "isolate", "\"run.isolate\" is \"yes\"; expected true or false"},
      {{{"case", 5}}, "case", "\"run.case\" is 5; expected a string"},
      {{{"filter", 7}}, "filter", "\"run.filter\" is 7; expected a string"},
      {{{"energy_window_s", -1}}, "energy_window_s", "\"run.energy_window_s\" is -1; expected a number from 0 to"},
      {{{"stopping", {{"fixed_samples", -3}}}},
       "stopping",
       "\"run.stopping.fixed_samples\" is -3; expected an integer from 1"},
      {{{"stopping", {{"max_noise_pct", "x"}}}},
       "stopping",
       "\"run.stopping.max_noise_pct\" is \"x\"; expected a number"},
      {{{"stopping", {{"warmup_calls", 2.5}}}},
       "stopping",
       "\"run.stopping.warmup_calls\" is 2.5; expected an integer"},
      {{{"stopping", 3}}, "stopping", "\"run.stopping\" is 3; expected an object"},
  };
  for (auto& b : bad) {
    nlohmann::json run = {{"case", kTinyCase}, {"source", "case"}};
    run.update(b.value);
    auto dir = results_with("resume_bad_" + b.key, run);
    auto out = cli(fmt::format("run --resume {} --dry-run", dir.string()));
    SCOPED_TRACE(b.value.dump());
    EXPECT_BAD_INPUT(out, (dir / "run.json").string() + ": " + b.message);
  }
  // Good values are taken: a stored threads=3 plans threads=3, stopping's 0 (unset) is no error.
  auto good = results_with("resume_good", {{"suite", "quick"},
                                           {"threads", 3},
                                           {"isolate", false},
                                           {"stopping", {{"warmup_calls", 0}, {"fixed_samples", 0}}}});
  auto out = cli(fmt::format("run --resume {} --dry-run", good.string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("/threads=3"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find("/threads=2\n"), std::string::npos) << out.text;
}

// A run.json that is a directory is refused, not read (its first read threw "Is a directory").
TEST(CliHostileInput, RunJsonThatIsADirectory) {
  auto dir = temp_dir("run_json_dir");
  fs::create_directories(dir / "run.json");
  auto out = cli(fmt::format("run --resume {} --dry-run", dir.string()));
  EXPECT_BAD_INPUT(out, (dir / "run.json").string() + ": is not a file");
}

// --filter and --exclude are RE2 only: a lookaround is refused (it ran on a backtracking engine,
// where '(?=g)(.*.*)*X' ran for ever and ignored SIGTERM), with the --exclude that does its work.
TEST(CliHostileInput, FilterRefusesLookaroundAndPointsAtExclude) {
  auto out = cli("run --suite ops --filter '(?=g)(.*.*)*X' --dry-run");
  EXPECT_BAD_INPUT(out, "--filter '(?=g)(.*.*)*X': lookaround");
  EXPECT_NE(out.text.find("give --exclude REGEX"), std::string::npos) << out.text;
  out = cli("run --suite ops --filter '^(?!layernorm/)' --dry-run");
  EXPECT_BAD_INPUT(out, "here --exclude '^layernorm/'");
  out = cli("check --filter '^[^/]+/(?!torch_compile)' --dry-run");
  EXPECT_BAD_INPUT(out, "here --filter '^[^/]+/' --exclude '^[^/]+/torch_compile'");
  out = cli("run --suite ops --exclude '(?<!x)y' --dry-run");
  EXPECT_BAD_INPUT(out, "--exclude '(?<!x)y': lookaround");
  out = cli("run --suite ops --exclude '(' --dry-run");
  EXPECT_BAD_INPUT(out, "--exclude '(' is not a valid regular expression");
}

TEST(CliHostileInput, ExcludeLeavesOutWhatItMatches) {
  auto all = cli("run --suite ops --filter onednn --dry-run");
  ASSERT_EQ(all.code, 0) << all.text;
  auto out = cli("run --suite ops --filter onednn --exclude '^layernorm/' --dry-run");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(all.text.find("\nlayernorm/onednn/"), std::string::npos) << all.text;
  EXPECT_EQ(out.text.find("\nlayernorm/"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("/onednn/"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find("/opmeter/fp32/batch"), std::string::npos) << out.text;  // --filter still holds
  out = cli("run --suite ops --exclude '.' --dry-run");
  EXPECT_BAD_INPUT(out, "--exclude '.' leaves none of the");
  out = cli("check --op relu --exclude '/reference/' --dry-run");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("relu/reference/"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("relu/"), std::string::npos) << out.text;
  out = cli("check --op relu --exclude 'relu' --dry-run");
  EXPECT_BAD_INPUT(out, "less --exclude 'relu'");
}

// A results directory or check.json of an older opmeter that stored a lookaround filter says how
// to resume it; flags given with --resume win, and the exclusion is stored and resumed.
TEST(CliHostileInput, ResumeOfAStoredLookaroundFilterSaysWhatToGive) {
  auto dir = results_with("resume_lookaround", {{"suite", "ops"}, {"filter", "^(?!layernorm/)"}});
  auto out = cli(fmt::format("run --resume {} --dry-run", dir.string()));
  EXPECT_BAD_INPUT(out, (dir / "run.json").string() + ": the stored --filter '^(?!layernorm/)': lookaround");
  EXPECT_NE(out.text.find("here --exclude '^layernorm/'; give them as flags with --resume"), std::string::npos)
      << out.text;
  out = cli(fmt::format("run --resume {} --exclude '^layernorm/' --dry-run", dir.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("\nlayernorm/"), std::string::npos) << out.text;

  auto check = temp_dir("check_lookaround");
  out = cli(fmt::format("check --op relu --impl reference --quick --exclude zzz -o {}", check.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  auto j = nlohmann::json::parse(std::ifstream(check / "check.json"));
  EXPECT_EQ(j["settings"]["exclude"], "zzz");
  j["settings"]["filter"] = "^[^/]+/(?!torch_compile)";
  j["settings"]["exclude"] = "";
  std::ofstream(check / "check.json") << j.dump();
  out = cli(fmt::format("check --resume {}", check.string()));
  EXPECT_BAD_INPUT(out, (check / "check.json").string() + " stores --filter '^[^/]+/(?!torch_compile)': lookaround");
  EXPECT_NE(out.text.find("--exclude '^[^/]+/torch_compile'"), std::string::npos) << out.text;
  out = cli(fmt::format("check --resume {} --exclude '^[^/]+/torch_compile'", check.string()));
  EXPECT_EQ(out.code, 0) << out.text;
}

// A link in a loop inside a results tree is skipped with a note (is_directory threw "Too many
// levels of symbolic links": an internal error in merge, report and compare), said once though
// the tree is walked more than once.
TEST(CliHostileInput, ALinkLoopInAResultsTreeIsSkipped) {
  auto root = temp_dir("link_loop");
  auto one = root / "tree" / "rank0";
  auto out = tiny_run(one);
  ASSERT_EQ(out.code, 0) << out.text;
  fs::create_symlink("loop", root / "tree" / "loop");
  const std::string tree = (root / "tree").string();
  for (const std::string& args : {fmt::format("merge {} -o {}", tree, (root / "merged").string()),
                                  fmt::format("report {} -o {}", tree, (root / "report.html").string()),
                                  fmt::format("compare {} {}", tree, one.string())}) {
    out = cli(args);
    SCOPED_TRACE(args);
    EXPECT_EQ(out.code, 0) << out.text;
    const std::string note = "skipping " + tree + "/loop: Too many levels of symbolic links";
    const auto first = out.text.find(note);
    EXPECT_NE(first, std::string::npos) << out.text;
    EXPECT_EQ(out.text.find(note, first + 1), std::string::npos) << out.text;  // once
  }
  // check's trees likewise (merge of check.json files, run --shard's rank folders).
  auto checks = root / "checks";
  out = cli(fmt::format("check --op relu --impl reference --quick -o {}", (checks / "r0").string()));
  ASSERT_EQ(out.code, 0) << out.text;
  fs::create_symlink("loop", checks / "loop");
  out = cli(fmt::format("merge {} -o {}", checks.string(), (root / "checks-merged").string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("internal error"), std::string::npos) << out.text;
  const std::string note = "skipping " + (checks / "loop").string() + ": ";
  const auto first = out.text.find(note);
  EXPECT_NE(first, std::string::npos) << out.text;
  EXPECT_EQ(out.text.find(note, first + 1), std::string::npos) << out.text;  // once
}

// A run.json that is a directory, in merge's tree too.
TEST(CliHostileInput, MergeOfARunJsonThatIsADirectory) {
  auto root = temp_dir("merge_run_json_dir");
  auto one = root / "tree" / "rank0";
  auto out = tiny_run(one);
  ASSERT_EQ(out.code, 0) << out.text;
  fs::remove(one / "run.json");
  fs::create_directories(one / "run.json");
  out = cli(fmt::format("merge {} -o {}", (root / "tree").string(), (root / "merged").string()));
  EXPECT_BAD_INPUT(out, (one / "run.json").string() + ": is not a file");
  fs::remove(one / "run.json");
  write(one, "run.json", R"({"run": 5})");
  out = cli(fmt::format("merge {} -o {}", (root / "tree").string(), (root / "merged").string()));
  EXPECT_BAD_INPUT(out, (one / "run.json").string() + ": \"run\" is 5; expected an object");
}

// A malformed check.json: check --resume and merge say what is wrong (a json type_error before).
TEST(CliHostileInput, MalformedCheckJson) {
  auto root = temp_dir("bad_check_json");
  auto dir = root / "tree" / "r0";
  auto out = cli(fmt::format("check --op relu --impl reference --quick -o {}", dir.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  const auto good = nlohmann::json::parse(std::ifstream(dir / "check.json"));
  struct Bad {
    std::string path;  // a JSON pointer
    nlohmann::json value;
    std::string message;
  };
  for (const Bad& b :
       std::vector<Bad>{{"/cases", 5, "\"cases\" is 5; expected a list"},
                        {"/cases/0", "x", "a case is \"x\"; expected an object"},
                        {"/cases/0/case", 7, "a case's \"case\" is 7; expected a string"},
                        {"/cases/0/status", 1, "\"status\" is 1; expected a string"},
                        {"/schema", 1, "not a check.json of opmeter check"},
                        {"/settings", 3, "\"settings\" is 3; expected an object"},
                        {"/settings/quick", "no", "\"settings.quick\" is \"no\"; expected true or false"},
                        {"/settings/filter", 2, "\"settings.filter\" is 2; expected a string"}}) {
    SCOPED_TRACE(b.path);
    auto j = good;
    j[nlohmann::json::json_pointer(b.path)] = b.value;
    std::ofstream(dir / "check.json") << j.dump();
    out = cli(fmt::format("check --resume {}", dir.string()));
    EXPECT_BAD_INPUT(out, b.message);
    if (b.path.rfind("/settings/", 0) == 0) continue;  // merge does not read a rank's selection
    out = cli(fmt::format("merge {} -o {}", (root / "tree").string(), (root / "merged").string()));
    EXPECT_BAD_INPUT(out, b.message);
  }
}

// --kernel with no file, or a directory: said so, also in a dry run (fs::absolute("") threw).
TEST(CliHostileInput, KernelWithNoFileOrADirectory) {
  const std::string tail = " --case 'relu/reference/fp32/batch=1,seq=1,hidden=8/threads=1' --dry-run";
  for (const std::string spec : {"", ":", ":foo"}) {
    auto out = cli("run --kernel '" + spec + "'" + tail);
    SCOPED_TRACE(spec);
    EXPECT_BAD_INPUT(out, "kernel '" + spec + "' names no file; expected FILE.py or FILE.py:NAME");
  }
  auto dir = temp_dir("kernel_dir") / "adir.yaml";
  fs::create_directories(dir);
  auto out = cli("run --kernel " + dir.string() + tail);
  EXPECT_BAD_INPUT(out, "kernel file '" + dir.string() + "' is a directory; expected a Python file");
  out = cli("check --kernel '' --dry-run");
  EXPECT_BAD_INPUT(out, "kernel '' names no file");
}

// --device with --case: the case string carries its device, so another --device is refused (it was
// ignored silently, garbage too); the same device is no contradiction.
TEST(CliHostileInput, DeviceWithCase) {
  const std::string run = fmt::format("run --case '{}' --dry-run", kTinyCase);
  auto out = cli(run + " --device garbage");
  EXPECT_BAD_INPUT(out, "garbage");
  out = cli(run + " --device cuda:7");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_EQ(out.text.find("internal error"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find(kTinyCase), std::string::npos) << out.text;  // not planned
  out = cli(run + " --device cpu");
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find(kTinyCase), std::string::npos) << out.text;
  auto cuda_case = cli("run --case 'gemm/reference/fp32/M=16,N=16,K=16/device=cuda:0' --device cpu --dry-run");
  EXPECT_EQ(cuda_case.code, 2) << cuda_case.text;
  EXPECT_EQ(cuda_case.text.find("internal error"), std::string::npos) << cuda_case.text;
}

// The random generator keeps its own bounds: multiples of multiple_of within [min, max] (min 16,
// max 100, multiple_of 64 gave 100; max 20 with multiple_of 4096 gave 4096), and a range with no
// multiple is a config error at its line and column.
TEST(CliHostileInput, RandomShapesStayMultiplesWithinTheirRange) {
  auto dir = temp_dir("random_shapes");
  auto config = write(dir, "r.yaml",
                      "ops: [gemm]\nimpls: [reference]\ndtypes: [fp32]\nthreads: 1\n"
                      "shapes: [{name: random, count: 20, min: 16, max: 100, seed: 3, multiple_of: 64}]\n");
  auto out = cli(fmt::format("run {} --dry-run", config.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("M=64,N=64,K=64"), std::string::npos) << out.text;  // the only multiple in range
  EXPECT_EQ(out.text.find("=100"), std::string::npos) << out.text;
  auto none = write(dir, "none.yaml",
                    "ops: [gemm]\nimpls: [reference]\ndtypes: [fp32]\nthreads: 1\n"
                    "shapes: [{name: random, count: 20, min: 16, max: 20, seed: 3, multiple_of: 4096}]\n");
  out = cli(fmt::format("run {} --dry-run", none.string()));
  EXPECT_BAD_INPUT(out, none.string() + ":5:");
  EXPECT_NE(out.text.find("random: no multiple of 4096 lies in [min, max] = [16, 20]"), std::string::npos) << out.text;
}

// --warmup takes what a config's stopping.warmup takes: 0 was "exactly 0 warm-up calls" in the
// help and meant "not given" (12494 calls were made).
TEST(CliHostileInput, WarmupZeroIsRefusedAsInAConfig) {
  auto out = cli(fmt::format("run --case '{}' --warmup 0 --dry-run", kTinyCase));
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("--warmup"), std::string::npos) << out.text;
  out = cli(fmt::format("run --case '{}' --warmup 1 --dry-run", kTinyCase));
  EXPECT_EQ(out.code, 0) << out.text;
  auto dir = temp_dir("warmup_zero");
  auto config = write(dir, "w.yaml", "ops: [relu]\nimpls: [reference]\ndtypes: [fp32]\nstopping: {warmup: 0}\n");
  out = cli(fmt::format("run {} --dry-run", config.string()));
  EXPECT_EQ(out.code, 2) << out.text;
}

// "did you mean" ignores case: BF16 is bf16, not fp16.
TEST(CliHostileInput, DidYouMeanIgnoresCase) {
  auto out = cli("run --pipeline 'resnet18:dtype=BF16' --dry-run");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("did you mean 'bf16'?"), std::string::npos) << out.text;
}

// A --case run with a profile of other threads measures the ceiling the profile lacks, and says
// so, as a config's run does (it printed "% of peak: -" silently).
TEST(CliHostileInput, CaseRunWithAProfileOfOtherThreads) {
  auto dir = temp_dir("case_profile_threads");
  auto profile = write(dir, "calibration.json",
                       R"({"schema": "opmeter-calibration/1", "threads": 2, "device": "cpu",
                           "peak_gflops": {"fp32": 50.0}, "bandwidth": {"memory_gbps": 10.0}, "context": {}})");
  const std::string relu = "relu/opmeter/fp32/batch=1,seq=4,hidden=64/threads=1";
  auto out = cli(fmt::format("run --case {} --calibration {} --dry-run", relu, profile.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("measured with threads=2, and cases run with threads=1: the run measures the ceilings of "
                          "threads=1 itself"),
            std::string::npos)
      << out.text;
  EXPECT_NE(out.text.find("bandwidth/opmeter/fp32/"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find(relu), std::string::npos) << out.text;
  // A profile that holds the case's ceilings adds nothing: the run is the one case.
  auto same = cli(fmt::format("run --case {} --calibration {} --dry-run",
                              "relu/opmeter/fp32/batch=1,seq=4,hidden=64/threads=2", profile.string()));
  ASSERT_EQ(same.code, 0) << same.text;
  EXPECT_NE(same.text.find("1 case from"), std::string::npos) << same.text;
  EXPECT_EQ(same.text.find("peak/"), std::string::npos) << same.text;
}

// A check.json's context and case deadline are read by type too: a wrong one names the file and
// the key (context.cpu.model = 5 was a json type_error; a deadline "x" was dropped silently).
TEST(CliHostileInput, CheckResumeReadsTheStoredContextAndDeadlineByType) {
  auto dir = temp_dir("check_resume_types");
  auto out = cli(fmt::format("check --op relu --impl reference --quick -o {}", dir.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  const auto good = nlohmann::json::parse(std::ifstream(dir / "check.json"));
  const std::string file = (dir / "check.json").string();
  struct Bad {
    std::string path;  // a JSON pointer
    nlohmann::json value;
    std::string message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"/context/cpu/model", 5, "\"context.cpu.model\" is 5; expected a string"},
           {"/context/cpu", "x", "\"context.cpu\" is \"x\"; expected an object"},
           {"/context/opmeter/git_sha", 3, "\"context.opmeter.git_sha\" is 3; expected a string"},
           {"/settings/case_deadline_s", "x",
            "\"settings.case_deadline_s\" is \"x\"; expected a number from 0.1 to "
            "86400, as --case-deadline takes"},
           {"/settings/case_deadline_s", -4, "\"settings.case_deadline_s\" is -4; expected a number from 0.1"}}) {
    SCOPED_TRACE(b.path);
    auto j = good;
    j[nlohmann::json::json_pointer(b.path)] = b.value;
    j["settings"]["isolate"] = true;  // a deadline of its own is taken only with it
    std::ofstream(dir / "check.json") << j.dump();
    out = cli(fmt::format("check --resume {}", dir.string()));
    EXPECT_BAD_INPUT(out, file + ": " + b.message);
  }
  // A good deadline is taken.
  auto j = good;
  j["settings"]["isolate"] = true;
  j["settings"]["case_deadline_s"] = 7;
  std::ofstream(dir / "check.json") << j.dump();
  out = cli(fmt::format("check --resume {}", dir.string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir / "check.json"))["settings"]["case_deadline_s"], 7.0);
}

// merge reads a rank's shard and opmeter version by type: a wrong one names the file and key (a
// shard size "x" was a json type_error), in run.json and in results.json's context alike.
TEST(CliHostileInput, MergeReadsTheShardAndVersionByType) {
  auto root = temp_dir("merge_types");
  auto one = root / "tree" / "rank0";
  auto out = tiny_run(one);
  ASSERT_EQ(out.code, 0) << out.text;
  const auto good = nlohmann::json::parse(std::ifstream(one / "run.json"));
  const std::string merge = fmt::format("merge {} -o {}", (root / "tree").string(), (root / "merged").string());
  struct Bad {
    std::string path;
    nlohmann::json value;
    std::string message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"/run/shard", {{"size", "x"}, {"rank", 0}}, "\"run.shard.size\" is \"x\"; expected an integer from 1"},
           {"/run/shard", {{"size", 2}, {"rank", -1}}, "\"run.shard.rank\" is -1; expected an integer from 0"},
           {"/run/shard", 4, "\"run.shard\" is 4; expected an object"},
           {"/context/opmeter/version", 5, "\"context.opmeter.version\" is 5; expected a string"}}) {
    SCOPED_TRACE(b.path + " " + b.value.dump());
    auto j = good;
    j[nlohmann::json::json_pointer(b.path)] = b.value;
    std::ofstream(one / "run.json") << j.dump();
    out = cli(merge);
    EXPECT_BAD_INPUT(out, (one / "run.json").string() + ": " + b.message);
  }
  // Without run.json the settings are results.json's context.run.
  fs::remove(one / "run.json");
  auto results = nlohmann::json::parse(std::ifstream(one / "results.json"));
  results["context"]["run"]["shard"] = {{"size", "x"}};
  std::ofstream(one / "results.json") << results.dump();
  out = cli(merge);
  EXPECT_BAD_INPUT(out, (one / "results.json").string() + ": \"context.run.shard.size\" is \"x\"; expected an integer");
}

// A results directory with a journal and no results.json reads run.json's formats (to say whether
// results.json was due): a formats that is no string names the file and key in report and merge.
TEST(CliHostileInput, StoredFormatsOfAnotherTypeIsBadInput) {
  auto root = temp_dir("stored_formats");
  auto one = root / "tree" / "rank0";
  auto out = tiny_run(one);
  ASSERT_EQ(out.code, 0) << out.text;
  fs::remove(one / "results.json");
  auto j = nlohmann::json::parse(std::ifstream(one / "run.json"));
  j["run"]["formats"] = 5;
  std::ofstream(one / "run.json") << j.dump();
  const std::string message = (one / "run.json").string() + ": \"run.formats\" is 5; expected a string";
  out = cli(fmt::format("report {} -o {}", one.string(), (root / "r.html").string()));
  EXPECT_BAD_INPUT(out, message);
  out = cli(fmt::format("merge {} -o {}", (root / "tree").string(), (root / "merged").string()));
  EXPECT_BAD_INPUT(out, message);
  j["run"]["formats"] = "csv";  // a string is read: no results.json was due, so no note about it
  std::ofstream(one / "run.json") << j.dump();
  out = cli(fmt::format("report {} -o {}", one.string(), (root / "r.html").string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("no results.json"), std::string::npos) << out.text;
}

// Empty values are refused, not taken as the default: --device '' ran on the CPU, --out '' wrote
// a timestamped directory (check: the current one).
TEST(CliHostileInput, EmptyDeviceAndOutAreRefused) {
  const std::string run = fmt::format("run --case '{}' --dry-run", kTinyCase);
  for (const std::string& args : {run + " --device ''", std::string("check --op relu --dry-run --device ''"),
                                  std::string("calibrate --device ''")}) {
    SCOPED_TRACE(args);
    EXPECT_BAD_INPUT(cli(args), "--device: must not be empty");
  }
  for (const std::string& args :
       {run + " --out ''", std::string("check --op relu --dry-run -o ''"), std::string("calibrate --out ''")}) {
    SCOPED_TRACE(args);
    EXPECT_BAD_INPUT(cli(args), "--out: must not be empty");
  }
}

// check's lists refuse an empty name (CLI11 dropped it: `--op add,` was `--op add`, and `--impl ,`
// took the next argument as an impl).
TEST(CliHostileInput, CheckListsRefuseAnEmptyName) {
  for (auto [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--op", "add,"}, {"--op", ",add"}, {"--op", "add,,relu"}, {"--dtype", "fp32,"}, {"--impl", ","}}) {
    auto out = cli(fmt::format("check {} '{}' --dry-run", flag, value));
    SCOPED_TRACE(flag + " " + value);
    EXPECT_BAD_INPUT(out, fmt::format("{}: '{}' has an empty name (a stray comma?)", flag, value));
  }
  EXPECT_BAD_INPUT(cli("check --op add --op '' --dry-run"), "--op: must not be empty");
  // Lists still split: two ops, one given as a list and one repeated.
  auto out = cli("check --op gemm,relu --op gelu --impl reference --dtype fp32 --dry-run");
  ASSERT_EQ(out.code, 0) << out.text;
  for (const char* op : {"\ngemm/reference/fp32/", "\nrelu/reference/fp32/", "\ngelu/reference/fp32/"}) {
    EXPECT_NE(("\n" + out.text).find(op), std::string::npos) << out.text;
  }
  EXPECT_EQ(out.text.find("/bf16/"), std::string::npos) << out.text;
}

// A format named twice is written once, as before, and now says so.
TEST(CliHostileInput, FormatNamedTwiceIsNoted) {
  auto out = cli(fmt::format("run --case '{}' --format json,json --dry-run", kTinyCase));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("note: --format 'json,json': json is named twice; its files (results.json) are written once"),
            std::string::npos)
      << out.text;
  out = cli(fmt::format("run --case '{}' --format csv,json,gbench --dry-run", kTinyCase));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("json (as gbench) is named twice"), std::string::npos) << out.text;
  out = cli(fmt::format("run --case '{}' --format csv,json --dry-run", kTinyCase));
  EXPECT_EQ(out.text.find("named twice"), std::string::npos) << out.text;
}

// --case-deadline times cases in a child process: without --isolate (and no --plugin, whose cases
// run in one anyway) it was accepted and did nothing.
TEST(CliHostileInput, CaseDeadlineNeedsIsolate) {
  const std::string run = fmt::format("run --case '{}' --dry-run --case-deadline 5", kTinyCase);
  EXPECT_BAD_INPUT(cli(run), "--case-deadline 5 needs --isolate");
  EXPECT_BAD_INPUT(cli("check --op relu --dry-run --case-deadline 5"), "--case-deadline 5 needs --isolate");
  auto out = cli(run + " --isolate");
  EXPECT_EQ(out.code, 0) << out.text;
  out = cli("check --op relu --dry-run --case-deadline 5 --isolate");
  EXPECT_EQ(out.code, 0) << out.text;
  out =
      cli(fmt::format("run --plugin {} --case 'relu/c_loop/fp32/batch=1,seq=4,hidden=8/threads=1' --dry-run "
                      "--case-deadline 5",
                      EXAMPLE_PLUGIN));
  EXPECT_EQ(out.code, 0) << out.text;
  // A config's plugins, which a dry run does not load, let it take the deadline as the run would.
  auto dir = temp_dir("deadline_config_plugin");
  auto config = write(
      dir, "p.yaml",
      fmt::format("ops: [relu]\nimpls: [c_loop]\nplugins: [{}]\nbatch: [1]\nseq: [4]\nhidden: [8]\n", EXAMPLE_PLUGIN));
  out = cli(fmt::format("run {} --dry-run --case-deadline 5", config.string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("not loaded"), std::string::npos) << out.text;
  // So do a resumed run's (ResumeFacts; its case is a built-in impl's, which a dry run lists without
  // the plugin), and a resumed run without plugins needs --isolate.
  const auto with_plugin = dir / "with_plugin", without = dir / "without";
  out = cli(fmt::format("run --plugin {} --case '{}' --samples 3 --no-report --out {}", EXAMPLE_PLUGIN, kTinyCase,
                        with_plugin.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  out = cli(fmt::format("run --resume {} --dry-run --case-deadline 5", with_plugin.string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("a dry run runs no code: not loading"), std::string::npos) << out.text;
  out = cli(fmt::format("run --case '{}' --samples 3 --no-report --out {}", kTinyCase, without.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_BAD_INPUT(cli(fmt::format("run --resume {} --dry-run --case-deadline 5", without.string())),
                   "--case-deadline 5 needs --isolate");
}

// A record whose samples are no times (0, -1, 1e308) is a damaged file: compare
// says so with exit 2, rather than judging the case "broken" (exit 1) or printing a 300-digit median.
TEST(CliHostileInput, CompareRefusesSamplesThatAreNoTimes) {
  auto root = temp_dir("compare_bad_samples");
  auto out = tiny_run(root / "base");
  ASSERT_EQ(out.code, 0) << out.text;
  std::ifstream in(root / "base" / "results.jsonl");
  std::string line;
  nlohmann::json record;
  while (std::getline(in, line))
    if (!line.empty()) record = nlohmann::json::parse(line);
  ASSERT_EQ(record["status"], "ok");
  for (auto [samples, shown] :
       std::vector<std::pair<nlohmann::json, std::string>>{{{-1.0, -1.0}, "samples_s holds -1"},
                                                           {{0.0, 1e-6}, "samples_s holds 0"},
                                                           {{1e308, 1e308}, "samples_s holds 1e+308"}}) {
    SCOPED_TRACE(shown);
    auto j = record;
    j["samples_s"] = samples;
    fs::create_directories(root / "new");
    std::ofstream(root / "new" / "results.jsonl") << j.dump() << "\n";
    out = cli(fmt::format("compare {} {}", (root / "base").string(), (root / "new" / "results.jsonl").string()));
    EXPECT_BAD_INPUT(out, shown);
  }
  // The sustained figure's samples too (compare --sustained reads them).
  auto j = record;
  j["sustained"] = {{"samples_s", {1e-6, -2.0}}, {"gflops", 1.0}, {"gbps", 1.0}};
  std::ofstream(root / "new" / "results.jsonl") << j.dump() << "\n";
  out = cli(fmt::format("compare {} {}", (root / "base").string(), (root / "new" / "results.jsonl").string()));
  EXPECT_BAD_INPUT(out, "sustained.samples_s holds -2");
}

// --resume reads its own journal only: a link there is refused (it was read through, then replaced
// by a file), and a last line cut short is dropped with a note, its case run again.
TEST(CliHostileInput, ResumeRefusesALinkedJournalAndNotesATornLine) {
  auto root = temp_dir("resume_linked_journal");
  auto out = tiny_run(root / "run");
  ASSERT_EQ(out.code, 0) << out.text;
  fs::rename(root / "run" / "results.jsonl", root / "elsewhere.jsonl");
  fs::create_symlink(root / "elsewhere.jsonl", root / "run" / "results.jsonl");
  out = cli(fmt::format("run --resume {} --samples 2 --warmup 1 --no-report", (root / "run").string()));
  EXPECT_BAD_INPUT(out, "results.jsonl: is a link");
  EXPECT_TRUE(fs::is_symlink(root / "run" / "results.jsonl"));
  fs::remove(root / "run" / "results.jsonl");
  write(root / "run", "results.jsonl", "{\"case\": \"gemm/ref");
  out = cli(fmt::format("run --resume {} --samples 2 --warmup 1 --no-report", (root / "run").string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("its last line was cut short (by the interruption): dropped"), std::string::npos) << out.text;
}

// A run given twice is one error naming it (not a second one about runs that "do not belong");
// a run with no results is merged with a warning saying so.
TEST(CliHostileInput, MergeNamesARunGivenTwiceAndWarnsOfAnEmptyOne) {
  auto root = temp_dir("merge_twice");
  auto out = tiny_run(root / "a");
  ASSERT_EQ(out.code, 0) << out.text;
  out = cli(fmt::format("merge {} {} -o {}", (root / "a").string(), (root / "a").string(), (root / "m").string()));
  EXPECT_BAD_INPUT(out, "is given twice");
  EXPECT_EQ(out.text.find("do not belong"), std::string::npos) << out.text;
  fs::create_directories(root / "b");
  fs::copy_file(root / "a" / "run.json", root / "b" / "run.json");
  write(root / "b", "results.jsonl", "{\"case\": \"gemm/ref");  // cut before its first record ended
  out = cli(fmt::format("merge {} {} -o {}", (root / "a").string(), (root / "b").string(), (root / "m2").string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("holds no results"), std::string::npos) << out.text;
}

// --hot and --threads still vary a --case, but say that they make another case string (compare
// would not match its results with the string's); the same settings say nothing.
TEST(CliHostileInput, HotOrThreadsOnACaseSayTheyMakeAnotherCase) {
  auto out = cli(fmt::format("run --case {} --hot --threads 2 --dry-run", kTinyCase));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("--threads 2 and --hot make the case gemm/reference/fp32/M=16,N=16,K=16/threads=2,hot"),
            std::string::npos)
      << out.text;
  out = cli(fmt::format("run --case {} --hot --dry-run", kTinyCase));
  EXPECT_NE(out.text.find("--hot makes the case gemm/reference/fp32/M=16,N=16,K=16/threads=1,hot"), std::string::npos)
      << out.text;
  out = cli(fmt::format("run --case {} --threads 1 --dry-run", kTinyCase));
  EXPECT_EQ(out.text.find("the case gemm"), std::string::npos) << out.text;
}
