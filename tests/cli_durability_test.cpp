// Issue 11 end to end: what is on disk after a full disk, a second run, a signal; bad numbers,
// case strings and paths; reports of stale results; bandwidth defaults.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "opmeter/context.hpp"
#include "report/reporters.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"

namespace {

// 27 tiny GEMMs (plus the peak they need) with 100 samples each: a journal of ~70 KB written over
// a few seconds, long enough to interrupt and larger than a small disk.
const char* kSweep = R"(ops: [gemm]
impls: [reference]
threads: 1
stopping: {samples: 100, warmup: 1}
shapes: [{name: sweep, min_power: 2, max_power: 4}]
)";
constexpr std::size_t kSweepCases = 28;

// Every line of a journal is a whole JSON record.
void expect_whole_lines(const fs::path& journal) {
  std::ifstream f(journal);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded()) << journal << ":" << n << " is torn";
  }
  auto text = slurp(journal);
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "the journal ends inside a line";
}

std::size_t iterations(const fs::path& results_json) {
  auto j = nlohmann::json::parse(std::ifstream(results_json));
  std::size_t n = 0;
  for (auto& b : j["benchmarks"]) n += b["run_type"] == "iteration";
  return n;
}

}  // namespace

// A disk that fills during the run (every file limited to a size, as RLIMIT_FSIZE does): the run
// stops at the first failed write with exit 2 and says where the finished cases are; the journal
// holds only whole lines, and --resume finishes the run.
TEST(CliDurability, FullDiskStopsTheRunAtOnceAndResumeFinishesIt) {
  auto dir = temp_dir("fulldisk");
  auto cfg = write(dir, "sweep.yaml", kSweep);
  auto res = dir / "res";
  // run.json (~3 KB) fits; the journal outgrows the limit after a few cases.
  auto out = cli_with_file_limit("run " + cfg.string() + " --out " + res.string() + " --no-report", 8u << 10);
  const auto& log = out.text;
  ASSERT_EQ(out.code, 2) << log;
  EXPECT_NE(log.find("cannot write " + (res / "results.jsonl").string() + ": File too large"), std::string::npos) << log;
  EXPECT_NE(log.find("continue with --resume " + res.string()), std::string::npos) << log;
  EXPECT_EQ(log.find("internal error"), std::string::npos) << log;
  expect_whole_lines(res / "results.jsonl");
  auto kept = line_count(res / "results.jsonl");
  EXPECT_GE(kept, 1u);
  EXPECT_LT(kept, kSweepCases);
  EXPECT_NE(log.find(fmt::format("the {} cases finished before it are in", kept)), std::string::npos) << log;

  auto resumed = cli("run --resume " + res.string() + " --no-report");
  ASSERT_EQ(resumed.code, 0) << resumed.text;
  EXPECT_NE(resumed.text.find(fmt::format("({} already done, {} to run)", kept, kSweepCases - kept)), std::string::npos)
      << resumed.text;
  EXPECT_EQ(line_count(res / "results.jsonl"), kSweepCases);
  EXPECT_EQ(iterations(res / "results.json"), kSweepCases);
}

// A disk that is full before the run: nothing is measured, and the message says so at once.
TEST(CliDurability, FullDiskAtTheStartStopsBeforeMeasuring) {
  auto dir = temp_dir("fullstart");
  auto cfg = write(dir, "sweep.yaml", kSweep);
  auto out = cli_with_file_limit("run " + cfg.string() + " --out " + (dir / "res").string(), 64);
  const auto& log = out.text;
  EXPECT_EQ(out.code, 2) << log;
  EXPECT_NE(log.find("cannot write " + (dir / "res" / "run.json").string()), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(dir / "res" / "results.jsonl")) << log;
  EXPECT_EQ(log.find("| gemm"), std::string::npos) << log;
}

// The same on a real full file system, where this test may mount one (root, mount allowed).
TEST(CliDurability, FullTmpfsKeepsWholeLines) {
  auto dir = temp_dir("tmpfs");
  auto mnt = dir / "mnt";
  fs::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno) << "); FullDiskStopsTheRun covers it";
  auto cfg = write(dir, "sweep.yaml", kSweep);
  auto out = cli("run " + cfg.string() + " --out " + (mnt / "res").string());
  auto journal = mnt / "res" / "results.jsonl";
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("No space left on device"), std::string::npos) << out.text;
  expect_whole_lines(journal);
  auto kept = line_count(journal);
  EXPECT_GE(kept, 1u) << out.text;
  EXPECT_LT(kept, kSweepCases);
  umount(mnt.c_str());
}

// Two runs on one directory: the second is refused while the first runs (whether it resumes or
// starts afresh), and a finished directory is not reused by a new run: nothing is lost or mixed.
TEST(CliDurability, OneRunPerResultsDirectory) {
  auto dir = temp_dir("tworuns");
  auto cfg = write(dir, "sweep.yaml", kSweep);
  auto res = dir / "res";
  auto first = spawn("run " + cfg.string() + " --out " + res.string() + " --no-report", dir / "first.log");
  ASSERT_TRUE(wait_until([&] { return fs::exists(res / "run.json"); }, 30)) << slurp(dir / "first.log");
  auto resume = cli("run --resume " + res.string());
  EXPECT_EQ(resume.code, 2) << resume.text;
  EXPECT_NE(resume.text.find("is in use by another opmeter run (pid " + std::to_string(pid_t(first))), std::string::npos)
      << resume.text;
  auto again = cli("run " + cfg.string() + " --out " + res.string());
  EXPECT_EQ(again.code, 2) << again.text;
  EXPECT_NE(again.text.find("in use by another opmeter run"), std::string::npos) << again.text;
  ASSERT_EQ(wait_exit(first), 0) << slurp(dir / "first.log");
  EXPECT_EQ(line_count(res / "results.jsonl"), kSweepCases);
  EXPECT_EQ(iterations(res / "results.json"), kSweepCases);

  auto reuse = cli("run " + cfg.string() + " --out " + res.string());
  EXPECT_EQ(reuse.code, 2) << reuse.text;
  EXPECT_NE(reuse.text.find("is not empty"), std::string::npos) << reuse.text;
  EXPECT_NE(reuse.text.find("continue the run there with --resume"), std::string::npos) << reuse.text;
  EXPECT_EQ(line_count(res / "results.jsonl"), kSweepCases);  // no second run appended to it

  // A folder of the user's own: refused, told to give another --out, and left as it was.
  const fs::path mine = dir / "mine";
  fs::create_directories(mine);
  std::ofstream(mine / "notes.txt") << "keep";
  auto theirs = cli("run " + cfg.string() + " --out " + mine.string());
  EXPECT_EQ(theirs.code, 2) << theirs.text;
  EXPECT_NE(theirs.text.find("is not empty (notes.txt): a new run needs an empty or new directory; give another --out"),
            std::string::npos)
      << theirs.text;
  EXPECT_FALSE(fs::exists(mine / ".opmeter.lock"));
}

// Ctrl-C reaches the whole process group, the isolated child too: its case is not a crash, the
// run exits 130, and --resume (alone: settings come from the directory) runs that case again.
TEST(CliDurability, CtrlCWithIsolateRecordsNoCrashAndResumeRerunsTheCase) {
  auto dir = temp_dir("isolate_int");
  auto cfg = write(dir, "hang.yaml", R"(ops: [gemm]
impls: [test_hang]
threads: 1
stopping: {samples: 2}
shapes: [{name: custom, shapes: [[8, 8, 8]]}]
)");
  auto res = dir / "res";
  auto pid = spawn("run " + cfg.string() + " --isolate --case-deadline 60 --out " + res.string(), dir / "log");
  // The peak case comes first; then the hanging case runs in its child.
  ASSERT_TRUE(wait_until([&] { return line_count(res / "results.jsonl") == 1; }, 60)) << slurp(dir / "log");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(-pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(dir / "log");
  auto results = opmeter::read_jsonl((res / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u) << slurp(dir / "log");
  EXPECT_EQ(results[0].kase.op, "peak");

  auto resumed = cli("run --resume " + res.string() + " --case-deadline 2");
  EXPECT_NE(resumed.text.find("(1 already done, 1 to run)"), std::string::npos) << resumed.text;
  results = opmeter::read_jsonl((res / "results.jsonl").string());
  ASSERT_EQ(results.size(), 2u) << resumed.text;
  EXPECT_EQ(results[1].kase.impl, "test_hang");
  EXPECT_EQ(results[1].status, opmeter::Status::timeout) << results[1].reason;  // isolated again, by the stored settings
}

TEST(CliDurability, SigtermExits143AndKeepsFinishedCases) {
  auto dir = temp_dir("sigterm");
  auto cfg = write(dir, "sweep.yaml", kSweep);
  auto res = dir / "res";
  auto pid = spawn("run " + cfg.string() + " --out " + res.string() + " --no-report", dir / "log");
  ASSERT_TRUE(wait_until([&] { return line_count(res / "results.jsonl") >= 2; }, 60)) << slurp(dir / "log");
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 143) << slurp(dir / "log");
  expect_whole_lines(res / "results.jsonl");
  EXPECT_NE(slurp(dir / "log").find("interrupted"), std::string::npos);
}

TEST(CliDurability, ResumeAloneTakesTheConfigAndSettingsOfTheDirectory) {
  auto dir = temp_dir("resume_alone");
  auto cfg = write(dir, "c.yaml", "ops: [gemm]\nimpls: [reference]\nthreads: 1\nstopping: {samples: 3}\n"
                                  "shapes: [{name: custom, shapes: [[8, 8, 8], [16, 8, 8]]}]\n");
  auto res = dir / "res";
  auto first = cli("run " + cfg.string() + " --filter M=16 --seed 7 --out " + res.string());
  ASSERT_EQ(first.code, 0) << first.text;
  ASSERT_EQ(line_count(res / "results.jsonl"), 2u);  // peak + the M=16 gemm
  // As if killed before the last case was written.
  auto lines = slurp(res / "results.jsonl");
  std::ofstream(res / "results.jsonl") << lines.substr(0, lines.find('\n') + 1);
  fs::remove(res / "results.json");

  auto out = cli("run --resume " + res.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("2 cases from " + cfg.string() + " (1 already done, 1 to run)"), std::string::npos) << out.text;
  auto results = opmeter::read_jsonl((res / "results.jsonl").string());
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].case_string, "gemm/reference/fp32/M=16,N=8,K=8/threads=1");
  EXPECT_EQ(results[1].samples.size(), 3u);
  auto j = nlohmann::json::parse(std::ifstream(res / "results.json"));
  EXPECT_EQ(j["context"]["run"]["seed"], 7);
  EXPECT_EQ(j["context"]["run"]["filter"], "M=16");

  auto none = temp_dir("resume_nothing");
  auto bare = cli("run --resume " + none.string());
  EXPECT_EQ(bare.code, 2) << bare.text;
  EXPECT_NE(bare.text.find("no run settings there"), std::string::npos) << bare.text;
}

TEST(CliDurability, NumbersMustBeFiniteAndInRange) {
  for (const char* bad : {"--timeout nan", "--timeout inf", "--timeout -1", "--max-noise nan", "--min-time nan",
                          "--warmup-s inf", "--samples 0", "--seed -5", "--llc-bytes -1", "--cooldown nan",
                          "--cooldown -1", "--heat-max inf", "--energy-window -0.5"}) {
    auto out = cli(std::string("run --dry-run ") + bad);
    EXPECT_EQ(out.code, 2) << bad << ": " << out.text;
    auto flag = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_NE(out.text.find(flag), std::string::npos) << bad << ": " << out.text;
  }
  auto seed = cli("run --dry-run --seed -5");
  EXPECT_NE(seed.text.find("non-negative integer"), std::string::npos) << seed.text;
  EXPECT_EQ(cli("run --dry-run --timeout 2.5 --seed 5 --samples 1").code, 0);
}

TEST(CliDurability, CaseStringsMustBeWholeAndThreadsRealistic) {
  auto empty = cli("run --dry-run --case ''");
  EXPECT_EQ(empty.code, 2) << empty.text;
  EXPECT_NE(empty.text.find("must have 5 parts"), std::string::npos) << empty.text;
  auto twice = cli("run --dry-run --case gemm/reference/fp32/M=64,M=32,N=8,K=8/threads=1");
  EXPECT_EQ(twice.code, 2) << twice.text;
  EXPECT_NE(twice.text.find("parameter 'M' is given twice"), std::string::npos) << twice.text;
  int too_many = opmeter::default_threads() + 1;
  auto over = cli(fmt::format("run --dry-run --case gemm/reference/fp32/M=8,N=8,K=8/threads={}", too_many));
  EXPECT_EQ(over.code, 0) << over.text;
  EXPECT_NE(over.text.find(fmt::format("warning: threads={} is more than the {} CPUs", too_many, too_many - 1)),
            std::string::npos) << over.text;
  auto fine = cli("run --dry-run --case gemm/reference/fp32/M=8,N=8,K=8/threads=1");
  EXPECT_EQ(fine.text.find("warning"), std::string::npos) << fine.text;
}

// results.json is written at the end: a truncated or stale one gives way to the journal, and the
// report says so; the same results given twice are shown once; compare notices a run against itself.
TEST(CliDurability, ReportReadsTheJournalWhenResultsJsonIsStaleOrTruncated) {
  auto dir = temp_dir("stale");
  auto cfg = write(dir, "c.yaml", "ops: [gemm]\nimpls: [reference]\nthreads: 1\nstopping: {samples: 3}\n"
                                  "shapes: [{name: custom, shapes: [[8, 8, 8], [16, 8, 8], [24, 8, 8]]}]\n");
  auto res = dir / "res";
  ASSERT_EQ(cli("run " + cfg.string() + " --no-report --out " + res.string()).code, 0);
  auto all = opmeter::read_jsonl((res / "results.jsonl").string());
  ASSERT_EQ(all.size(), 4u);
  auto html = (dir / "r.html").string();

  // Stale: results.json of the first two cases only.
  std::ofstream(res / "results.json") << opmeter::gbench_json(nlohmann::json::object(), {all[0], all[1]}).dump();
  auto stale = cli("report " + res.string() + " -o " + html);
  ASSERT_EQ(stale.code, 0) << stale.text;
  EXPECT_NE(stale.text.find("is stale: 2 of the journal's 4 cases are not in it; reading the journal"), std::string::npos)
      << stale.text;
  EXPECT_NE(stale.text.find("4 cases from 1 source"), std::string::npos) << stale.text;

  // Truncated: cut in the middle.
  auto text = slurp(res / "results.json");
  std::ofstream(res / "results.json") << text.substr(0, text.size() / 2);
  auto cut = cli("report " + (res / "results.json").string() + " -o " + html);
  ASSERT_EQ(cut.code, 0) << cut.text;
  EXPECT_NE(cut.text.find("cannot be read"), std::string::npos) << cut.text;
  EXPECT_NE(cut.text.find("4 cases from 1 source"), std::string::npos) << cut.text;

  auto twice = cli("report " + res.string() + " " + res.string() + "/ " + (res / "results.jsonl").string() + " -o " + html);
  ASSERT_EQ(twice.code, 0) << twice.text;
  EXPECT_NE(twice.text.find("is the same results as an earlier argument: shown once"), std::string::npos) << twice.text;
  EXPECT_NE(twice.text.find("4 cases from 1 source"), std::string::npos) << twice.text;

  auto self = cli("compare " + res.string() + " " + res.string());
  EXPECT_EQ(self.code, 0) << self.text;
  EXPECT_NE(self.text.find("BASE and NEW are the same results"), std::string::npos) << self.text;
}

// Paths that cannot be written or read are the user's to fix: exit 2 naming them, never exit 3.
TEST(CliDurability, BadPathsAreUserErrors) {
  auto dir = temp_dir("badpaths");
  const std::string one = "--case gemm/reference/fp32/M=8,N=8,K=8/threads=1 --samples 2";
  auto proc = cli("run " + one + " --out /proc/self");
  EXPECT_EQ(proc.code, 2) << proc.text;
  EXPECT_NE(proc.text.find("/proc/self"), std::string::npos) << proc.text;
  auto file = write(dir, "file", "x");
  auto under_file = cli("run " + one + " --out " + (file / "res").string());
  EXPECT_EQ(under_file.code, 2) << under_file.text;
  EXPECT_NE(under_file.text.find((file / "res").string()), std::string::npos) << under_file.text;
  auto cal = cli("run " + one + " --calibration " + dir.string());
  EXPECT_EQ(cal.code, 2) << cal.text;
  EXPECT_NE(cal.text.find("is a directory"), std::string::npos) << cal.text;
  auto cfg = cli("run " + dir.string());
  EXPECT_EQ(cfg.code, 2) << cfg.text;

  // A read-only directory, for a user who cannot write it (root can: run as nobody then).
  auto ro = dir / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  std::string cmd = (getuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "") + std::string(opmeter_testbin()) +
                    " run " + one + " --out " + (ro / "res").string() + " 2>&1";
  Output ro_out{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) ro_out.text += buf.data();
  int status = pclose(p);
  ro_out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (ro_out.text.find("setpriv:") != std::string::npos || ro_out.code == 126 || ro_out.code == 127)
    GTEST_SKIP() << "could not run as a user without write access: " << ro_out.text;
  EXPECT_EQ(ro_out.code, 2) << ro_out.text;
  EXPECT_NE(ro_out.text.find((ro / "res").string() + ": Permission denied"), std::string::npos) << ro_out.text;
  EXPECT_EQ(ro_out.text.find("internal error"), std::string::npos) << ro_out.text;
}

// Results under a path that is not UTF-8: compare --format json writes it (as U+FFFD), no crash.
TEST(CliDurability, NonUtf8PathsInJsonOutput) {
  auto dir = temp_dir("utf8");
  auto odd = dir / "run\xff\xfe";
  auto out = cli("run --case gemm/reference/fp32/M=8,N=8,K=8/threads=1 --samples 3 --out '" + odd.string() + "'");
  ASSERT_EQ(out.code, 0) << out.text;
  auto cmp = cli("compare '" + odd.string() + "' '" + odd.string() + "/results.json' --format json -o " +
                 (dir / "c.json").string());
  EXPECT_EQ(cmp.code, 0) << cmp.text;
  auto j = nlohmann::json::parse(std::ifstream(dir / "c.json"), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_NE(j.dump().find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

// Bandwidth arrays from --llc-bytes, recorded in the run settings, and the read kernel correct.
TEST(CliDurability, LlcBytesSizesBandwidthArraysAndIsRecorded) {
  auto dir = temp_dir("llc");
  auto cfg = write(dir, "bw.yaml", "ops: [bandwidth]\nthreads: 1\nbandwidth: {kernels: [read]}\nstopping: {samples: 3}\n");
  auto res = dir / "res";
  auto out = cli("run " + cfg.string() + " --llc-bytes 1048576 --no-report --out " + res.string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto j = nlohmann::json::parse(std::ifstream(res / "results.json"));
  EXPECT_EQ(j["context"]["run"]["llc_bytes"], 1048576);
  EXPECT_EQ(j["context"]["cpu"]["llc_bytes_used"], 1048576);
  auto results = opmeter::read_jsonl((res / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, opmeter::Status::ok) << results[0].reason;
  // 4x 1 MiB is under the 64 MiB floor: 64 MiB of floats (or 1/8 of free memory, if less).
  if (opmeter::available_memory_bytes() > (std::size_t{1} << 30)) {
    EXPECT_EQ(results[0].kase.get("n"), std::to_string(16u << 20));
  }
}
