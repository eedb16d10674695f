// `opmeter check` stopped by a signal keeps what it finished (check.json, the matrix, a line saying
// how many cases were checked, exit 128 + the signal) and `--resume DIR` checks only the rest.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

// What check prints on stdout: the matrix, the problems and the skipped (stderr's last line after).
std::string printed(const std::string& text) {
  auto from = text.find("op/impl");
  return from == std::string::npos ? "" : text.substr(from, text.find("opmeter check: every", from) - from);
}

// Two quick gelu cases (an op that ends, so check.json is written), then a GEMM that hangs in its
// child process until the signal comes.
const std::string kGeluThenHang = "check --filter '^(gelu/reference|gemm/test_hang)/' --quick --isolate";

// Starts kGeluThenHang, waits until gelu is done and the hanging case runs, sends `sig` to the
// process group (as a terminal or `timeout` does) and returns the exit code.
int check_until_signal(const fs::path& dir, int sig) {
  auto log = dir / "log";
  pid_t pid = spawn(kGeluThenHang + " --case-deadline 60 -o " + (dir / "res").string(), log);
  bool gelu_done = wait_until([&] { return has(slurp(log), "opmeter check: gelu (2 cases, "); }, 60);
  EXPECT_TRUE(gelu_done) << slurp(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the hanging child has started
  kill(-pid, sig);
  return wait_exit(pid);
}

}  // namespace

TEST(CheckInterrupt, SigintKeepsTheFinishedCasesAndResumeChecksOnlyTheRest) {
  auto dir = temp_dir("check_sigint");
  EXPECT_EQ(check_until_signal(dir, SIGINT), 130) << slurp(dir / "log");
  const auto log = slurp(dir / "log");
  const auto res = dir / "res";
  auto j = read_json(res / "check.json");
  ASSERT_EQ(j["cases"].size(), 2u) << j.dump(1);  // exactly the finished cases: not the interrupted one
  for (auto& c : j["cases"]) {
    EXPECT_EQ(c["impl"], "reference") << c.dump();
    EXPECT_EQ(c["status"], "pass") << c.dump();
  }
  EXPECT_EQ(j["progress"], nlohmann::json({{"planned", 3}, {"checked", 2}, {"state", "interrupted"}}));
  EXPECT_EQ(j["counts"]["pass"], 2);
  // The matrix of what finished, and a line saying so.
  EXPECT_TRUE(has(log, "gelu/reference")) << log;
  EXPECT_TRUE(has(log, "interrupted (SIGINT): 2 of the 3 cases checked; opmeter check --resume " + res.string() +
                           " checks the other 1"))
      << log;
  EXPECT_TRUE(has(log, "opmeter check: gemm (0 cases, ")) << log;  // where it stopped
  EXPECT_TRUE(has(log, ", interrupted)")) << log;

  // The stored selection (filter, quick, isolate) again; the deadline given now wins.
  auto resumed = cli("check --resume " + res.string() + " --case-deadline 1");
  EXPECT_EQ(resumed.code, 1) << resumed.text;  // the hanging case times out
  EXPECT_TRUE(has(resumed.text, "3 cases on cpu (2 already in " + (res / "check.json").string() + ", 1 to check)"))
      << resumed.text;
  j = read_json(res / "check.json");
  ASSERT_EQ(j["cases"].size(), 3u) << j.dump(1);
  EXPECT_EQ(j["cases"][2]["case"], "gemm/test_hang/fp32/M=37,N=41,K=43/threads=2");
  EXPECT_EQ(j["cases"][2]["status"], "timeout");
  EXPECT_EQ(j["progress"]["state"], "finished");
  EXPECT_EQ(j["settings"]["case_deadline_s"], 1.0);
}

TEST(CheckInterrupt, SigtermExits143KeepingTheFinishedCases) {
  auto dir = temp_dir("check_sigterm");
  EXPECT_EQ(check_until_signal(dir, SIGTERM), 143) << slurp(dir / "log");
  EXPECT_TRUE(has(slurp(dir / "log"), "interrupted (SIGTERM): 2 of the 3 cases checked")) << slurp(dir / "log");
  EXPECT_EQ(read_json(dir / "res" / "check.json")["cases"].size(), 2u);
}

// A check cut after a few cases, resumed, equals the same check uninterrupted: the same cases in
// the same order with the same verdicts, errors and reasons, matrix and counts.
TEST(CheckResume, TheUnionEqualsAnUninterruptedCheck) {
  auto dir = temp_dir("check_union");
  // Passing, failing and skipped cases (openblas has no bf16).
  const std::string selection = "check --op gemm --impl test_wrong,reference,openblas --dtype fp32,bf16";
  auto whole = cli(selection + " -o " + (dir / "whole").string());
  ASSERT_EQ(whole.code, 1) << whole.text;
  auto expected = read_json(dir / "whole" / "check.json");
  ASSERT_GE(expected["cases"].size(), 6u);

  auto cut = expected;  // as a check stopped after 5 cases leaves it
  cut["cases"] = nlohmann::json(std::vector<nlohmann::json>(expected["cases"].begin(), expected["cases"].begin() + 5));
  fs::create_directories(dir / "cut");
  std::ofstream(dir / "cut" / "check.json") << cut.dump(1);
  auto resumed = cli("check --resume " + (dir / "cut").string());
  EXPECT_EQ(resumed.code, 1) << resumed.text;
  auto got = read_json(dir / "cut" / "check.json");
  EXPECT_EQ(got["cases"], expected["cases"]);
  EXPECT_EQ(got["matrix"], expected["matrix"]);
  EXPECT_EQ(got["counts"], expected["counts"]);
  EXPECT_EQ(got["settings"], expected["settings"]);
  EXPECT_EQ(got["progress"]["checked"], expected["cases"].size());
  EXPECT_EQ(printed(resumed.text), printed(whole.text)) << whole.text << "\n---\n" << resumed.text;

  // Resumed again when nothing is left: the same file, nothing checked.
  auto again = cli("check --resume " + (dir / "cut").string());
  EXPECT_TRUE(has(again.text, "(" + std::to_string(expected["cases"].size()) + " already in")) << again.text;
  EXPECT_EQ(read_json(dir / "cut" / "check.json")["cases"], expected["cases"]);
}

TEST(CheckResume, BadInputExitsTwoSayingWhat) {
  auto dir = temp_dir("check_resume_bad");
  auto made = cli("check --op relu --impl reference --quick -o " + (dir / "cpu").string());
  ASSERT_EQ(made.code, 0) << made.text;
  const std::string cpu = (dir / "cpu").string();
  fs::create_directories(dir / "empty");
  fs::create_directories(dir / "garbled");
  std::ofstream(dir / "garbled" / "check.json") << "{ not json";
  fs::create_directories(dir / "other_cpu");  // the same check, on another CPU model
  auto j = read_json(dir / "cpu" / "check.json");
  j["context"]["cpu"]["model"] = "Some Other CPU 9000";
  std::ofstream(dir / "other_cpu" / "check.json") << j.dump();
  fs::create_directories(dir / "other_build");  // the same check, by another build of opmeter
  j = read_json(dir / "cpu" / "check.json");
  j["context"]["opmeter"]["git_sha"] = "0123456789ab";
  std::ofstream(dir / "other_build" / "check.json") << j.dump();
  fs::create_directories(dir / "no_device");  // settings without the device it was checked on
  j = read_json(dir / "cpu" / "check.json");
  j["settings"].erase("device");
  std::ofstream(dir / "no_device" / "check.json") << j.dump();

  struct Bad {
    std::string args, says;
  };
  for (const Bad& b : {Bad{"--resume " + (dir / "missing").string(), "no such directory"},
                       Bad{"--resume " + (dir / "empty").string(), "no check.json there"},
                       Bad{"--resume " + (dir / "garbled").string(), "is not JSON"},
                       Bad{"--resume " + cpu + " --device cuda:0", "its cases were checked on cpu, not --device cuda:0"},
                       Bad{"--resume " + (dir / "other_cpu").string(), "its cases were checked on Some Other CPU 9000 (cpu)"},
                       Bad{"--resume " + (dir / "other_build").string(), "checked by opmeter 0123456789ab, this is opmeter "},
                       Bad{"--resume " + cpu + " -o " + (dir / "elsewhere").string(), "give no -o"},
                       Bad{"--resume " + (dir / "no_device").string(), "check.json names no device in its settings"},
                       Bad{"--resume " + cpu + " --shard 0/2", "a sharded check (--shard, mpirun, srun) cannot resume one check.json"}}) {
    auto out = cli("check " + b.args);
    EXPECT_EQ(out.code, 2) << b.args << "\n" << out.text;
    EXPECT_TRUE(has(out.text, b.says)) << b.args << "\n" << out.text;
  }
  EXPECT_EQ(read_json(dir / "cpu" / "check.json")["cases"], j["cases"]);  // left as it was
}
