// Honest numbers on a busy machine: batches sized by the fastest warm-up call, and the CPU time
// other processes took during a case measured, flagged `contended` above a share.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

#include <fmt/format.h>

#include "engine/contention.hpp"
#include "opmeter/context.hpp"
#include "opmeter/engine.hpp"
#include "opmeter/result.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {
const char* kStat =
    "cpu  1000 10 300 5000 40 5 6 70 0 0\n"
    "cpu0 600 10 100 2000 20 2 3 30 0 0\n"
    "cpu1 400 0 200 3000 20 3 3 40 0 0\n"
    "intr 1 2 3\n";
}  // namespace

TEST(ProcStat, SumsBusyAndStealTicksOfTheCpusAsked) {
  auto cpu1 = parse_proc_stat(kStat, {1});
  ASSERT_TRUE(cpu1);
  EXPECT_DOUBLE_EQ(cpu1->busy, 400 + 0 + 200 + 3 + 3);  // idle and iowait are not busy
  EXPECT_DOUBLE_EQ(cpu1->steal, 40);
  auto both = parse_proc_stat(kStat, {0, 1});
  ASSERT_TRUE(both);
  EXPECT_DOUBLE_EQ(both->busy, (600 + 10 + 100 + 2 + 3) + 606.0);
  EXPECT_DOUBLE_EQ(both->steal, 70);
  auto all = parse_proc_stat(kStat, {});
  ASSERT_TRUE(all);
  EXPECT_DOUBLE_EQ(all->busy, 1000 + 10 + 300 + 5 + 6);
}

TEST(ProcStat, MissingCpuOrShortLineIsNotAReading) {
  EXPECT_FALSE(parse_proc_stat(kStat, {2}));
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3\n", {0}));
  EXPECT_FALSE(parse_proc_stat("", {}));
}

TEST(ProcStat, ProcessTicksAreUtimePlusStimeAfterTheCommand) {
  // A command name with spaces and parentheses: fields are counted after the last ')'.
  const char* stat = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194304 99 0 0 0 123 45 7 8 20 0 3 0 46889";
  auto ticks = parse_process_ticks(stat);
  ASSERT_TRUE(ticks);
  EXPECT_DOUBLE_EQ(*ticks, 123 + 45);  // not the children's 7 + 8
  EXPECT_FALSE(parse_process_ticks("4242 (cut) S 1 2"));
  EXPECT_FALSE(parse_process_ticks("no parenthesis"));
}

TEST(ProcStat, LoadAverage) {
  auto l = parse_loadavg("2.06 1.57 0.78 3/107 15322\n");
  ASSERT_TRUE(l);
  EXPECT_DOUBLE_EQ(l->one, 2.06);
  EXPECT_DOUBLE_EQ(l->fifteen, 0.78);
  EXPECT_EQ(l->running, 3);
  EXPECT_EQ(l->tasks, 107);
  EXPECT_FALSE(parse_loadavg("2.06 1.57"));
  EXPECT_EQ(load_json(*l, 2)["loadavg_1m"], 2.06);
}

namespace {
CpuSample sample(double busy, double steal, double own, double wall) {
  return {.machine = {busy, steal}, .own_ticks = own, .wall_s = wall, .valid = true};
}
}  // namespace

TEST(Contention, OthersTimeBeyondTheFreeCpusComesOutOfTheCaseThreads) {
  // 2 s at 100 ticks/s on 4 CPUs: 800 ticks in all. The case (2 threads) used 390; the machine
  // was busy for 390 + 300: others used 1.5 CPUs, steal 0.25 CPU. Two CPUs were free for them:
  // nothing came out of the case's threads.
  auto c = contention(sample(1000, 10, 50, 10), sample(1690, 60, 440, 12), 100, 4, 2);
  EXPECT_NEAR(c.others_cpus, 300.0 / 200, 1e-12);
  EXPECT_NEAR(c.steal_cpus, 50.0 / 200, 1e-12);
  EXPECT_DOUBLE_EQ(c.taken_share, 0);
  EXPECT_FALSE(c.contended);
  // The same on 2 CPUs, both the case's: (1.5 + 0.25) / 2 of its CPU time went to others.
  c = contention(sample(1000, 10, 50, 10), sample(1690, 60, 440, 12), 100, 2, 2);
  EXPECT_NEAR(c.taken_share, 1.75 / 2, 1e-12);
  EXPECT_TRUE(c.contended);
  // A quiet machine: a daemon's 0.02 CPU.
  c = contention(sample(0, 0, 0, 0), sample(204, 0, 200, 1), 100, 2, 2);
  EXPECT_NEAR(c.taken_share, 0.02, 1e-12);
  EXPECT_FALSE(c.contended);
  // Just above the share.
  double others = 2 * (kContendedShare + 0.01) * 100;
  EXPECT_TRUE(contention(sample(0, 0, 0, 0), sample(100 + others, 0, 100, 1), 100, 2, 2).contended);
  // No reading, no claim.
  CpuSample invalid;
  EXPECT_FALSE(contention(invalid, sample(1e6, 0, 0, 1), 100, 2, 2).contended);
}

TEST(Contention, FlagsTheResultWithTheReason) {
  Result r;
  r.kase.threads = 2;
  note_contention(r, {.others_cpus = 1.2, .steal_cpus = 0, .taken_share = 0.6, .contended = true});
  EXPECT_TRUE(r.has_flag("contended"));
  EXPECT_EQ(r.details["others_cpus"], "1.20");
  EXPECT_NE(r.details["contention"].find("60%"), std::string::npos) << r.details["contention"];
  Result quiet;
  note_contention(quiet, {.others_cpus = 0.01});
  EXPECT_FALSE(quiet.has_flag("contended"));
  EXPECT_EQ(quiet.details["others_cpus"], "0.01");
}

TEST(Contention, ThisProcessesOwnTicksAreCounted) {
  auto before = read_cpu_sample();
  ASSERT_TRUE(before.valid);
  volatile double x = 0;
  const std::clock_t t0 = std::clock();  // CPU time: the machine may be busy
  while (std::clock() - t0 < CLOCKS_PER_SEC / 5) x = x + 1;
  auto after = read_cpu_sample();
  // 0.2 s of our own CPU time, ~20 ticks; the machine counted at least those.
  EXPECT_GE(after.own_ticks - before.own_ticks, 10);
  EXPECT_GE(after.machine.busy - before.machine.busy, after.own_ticks - before.own_ticks - 2);
}

namespace {
// An impl whose warm-up calls are fast except the last, as a call that paid for waking threads.
class SlowLastWarmupImpl : public Impl {
 public:
  explicit SlowLastWarmupImpl(std::size_t slow_call) : slow_call_(slow_call) {}
  void setup(const Case&, const SetupOptions&) override {}
  void run(std::size_t) override {
    if (++calls_ == slow_call_) std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  Check verify(std::uint64_t) override { return {true}; }

 private:
  std::size_t slow_call_, calls_ = 0;
};
}  // namespace

TEST(Batching, SizedByTheFastestWarmupCallNotTheLast) {
  SlowLastWarmupImpl impl(4);
  Stopping s;
  s.warmup_calls = 4;
  s.fixed_samples = 2;
  auto m = measure(impl, 1, s);
  EXPECT_GT(m.batch, 100u);  // the fast calls take ~nothing: 1 ms samples hold many
}

namespace {
// An impl whose first calls each wait (as threads do for a timeslice on a busy machine).
class SlowFirstCallsImpl : public Impl {
 public:
  explicit SlowFirstCallsImpl(std::size_t slow) : slow_(slow) {}
  void setup(const Case&, const SetupOptions&) override {}
  void run(std::size_t) override {
    if (++calls_ <= slow_) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  Check verify(std::uint64_t) override { return {true}; }

 private:
  std::size_t slow_, calls_ = 0;
};
}  // namespace

TEST(Batching, SizedAgainWhenTheFirstSamplesAreFarShorterThanEveryWarmupCall) {
  SlowFirstCallsImpl impl(5);
  Stopping s;
  s.warmup_calls = 5;  // all slow: a batch of one
  s.fixed_samples = 20;
  auto m = measure(impl, 1, s);
  EXPECT_GT(m.batch, 100u);
  EXPECT_EQ(m.samples.size(), 20u);
  EXPECT_EQ(m.warmup_calls, 5u + 10u);  // the first ten one-call samples became warm-up
  EXPECT_EQ(m.calls, 20 * m.batch);
}

TEST(Batching, TimedWarmupRunsSeveralCallsUnlessTheyAreLong) {
  Stopping s;
  s.warmup_s = 0.05;
  EXPECT_FALSE(warmed_up(kMinWarmupCalls, 0.01, s));  // warmup_s first
  EXPECT_FALSE(warmed_up(1, 0.06, s));  // a first call of 60 ms may have paid for waking threads
  EXPECT_FALSE(warmed_up(kMinWarmupCalls - 1, kWarmupProbeS - 0.01, s));
  EXPECT_TRUE(warmed_up(kMinWarmupCalls, 0.06, s));
  EXPECT_TRUE(warmed_up(1, kWarmupProbeS, s));  // a call that long is a batch of one anyway
}

namespace {
// Processes that keep every CPU busy until destroyed.
struct BusyProcesses {
  explicit BusyProcesses(int n) {
    for (int i = 0; i < n; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      if (pid > 0) pids.push_back(pid);
    }
  }
  ~BusyProcesses() {
    for (pid_t p : pids) kill(p, SIGKILL);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
  }
  std::vector<pid_t> pids;
};

Result run_one(const fs::path& dir, const std::string& kase) {
  auto out = cli(fmt::format("run --case {} --timeout 1 --min-time 0.2 --energy-window 0 --no-report --out {}", kase,
                             dir.string()));
  EXPECT_EQ(out.code, 0) << out.text;
  auto results = read_jsonl((dir / "results.jsonl").string());
  return results.empty() ? Result{} : results.front();
}
}  // namespace

TEST(Contention, LoadedMachineGivesTheQuietTimeOrSaysContended) {
  const std::string kase = "add/opmeter/fp32/batch=1,seq=512,hidden=49/threads=2";
  auto dir = temp_dir("contention");
  Result quiet = run_one(dir / "quiet", kase);
  Result loaded;
  {
    BusyProcesses busy(std::max(2, default_threads()));
    loaded = run_one(dir / "loaded", kase);
  }
  ASSERT_EQ(quiet.status, Status::ok) << quiet.reason;
  ASSERT_EQ(loaded.status, Status::ok) << loaded.reason;
  EXPECT_TRUE(loaded.summary.median < 2 * quiet.summary.median || loaded.has_flag("contended"))
      << "quiet " << quiet.summary.median << " s, loaded " << loaded.summary.median << " s ±"
      << 100 * loaded.summary.precision << "%, others used " << loaded.details["others_cpus"] << " CPUs";
  // The busy processes were seen.
  EXPECT_GT(std::stod(loaded.details.at("others_cpus")), 0.5);
}
