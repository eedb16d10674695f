// Ctrl-C, SIGTERM and SIGKILL while opmeter waits on its worker or fits a model (issue 27, item
// 5): exit 130 within a second or two, the worker stopped, the temporary files removed; a worker
// whose opmeter was killed ends by itself.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include "util/interrupt.hpp"
#include "predict/model.hpp"
#include "tests/predict_model_fixtures.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {

const std::string kPython = OPMETER_TEST_PYTHON;
const std::string kSource = opmeter_source_dir();
const std::string kFakeWorker = kSource + "/tests/data/workers/fake_worker.py";
const std::string kSleepyKernel = kSource + "/tests/data/kernels/sleepy_import.py:sleepy";

// The worker's environment for the spawned opmeter (inherited), undone after the test.
struct SpawnEnv {
  SpawnEnv(const std::string& script, const std::string& mode) {
    setenv("OPMETER_PYTHON", kPython.c_str(), 1);
    if (!script.empty()) setenv("OPMETER_WORKER", script.c_str(), 1);
    setenv("FAKE_WORKER_MODE", mode.c_str(), 1);
  }
  ~SpawnEnv() {
    for (const char* v : {"OPMETER_PYTHON", "OPMETER_WORKER", "FAKE_WORKER_MODE"}) unsetenv(v);
  }
};

// The child process of `parent` (its worker), from /proc.
std::optional<pid_t> child_of(pid_t parent) {
  for (auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = slurp(entry.path() / "stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) return static_cast<pid_t>(std::stol(name));
  }
  return std::nullopt;
}

// A variable of a process's environment.
std::string environ_of(pid_t pid, const std::string& name) {
  std::string env = slurp(fs::path("/proc") / std::to_string(pid) / "environ");
  std::size_t from = 0;
  while (from < env.size()) {
    std::size_t end = env.find('\0', from);
    if (end == std::string::npos) end = env.size();
    std::string entry = env.substr(from, end - from);
    if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
    from = end + 1;
  }
  return "";
}

// Ended: no such process, or a zombie waiting for whoever adopted it to reap it.
bool gone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::string stat = slurp(fs::path("/proc") / std::to_string(pid) / "stat");
  auto close = stat.rfind(')');
  return close == std::string::npos || (close + 2 < stat.size() && stat[close + 2] == 'Z');
}

// The exit code within `seconds` (128 + signal when killed), or nullopt (then it is killed).
std::optional<int> exit_within(pid_t pid, double seconds) {
  int status = 0;
  bool done = wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; }, seconds);
  if (!done) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return std::nullopt;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Started {
  pid_t opmeter = 0, worker = 0;
  fs::path private_dir;
  // A test that stopped early leaves nothing running.
  ~Started() {
    if (opmeter > 0 && waitpid(opmeter, nullptr, WNOHANG) == 0) {
      kill(-opmeter, SIGKILL);
      waitpid(opmeter, nullptr, 0);
    }
    if (worker > 0 && !gone(worker)) kill(-worker, SIGKILL);
  }
};

// Starts `args` and waits for its worker to start and, per `stuck`, to reach its long wait.
void start_with_worker(Started& s, const std::string& args, const fs::path& log, const std::function<bool()>& stuck) {
  s.opmeter = spawn(args, log);
  std::optional<pid_t> w;
  EXPECT_TRUE(wait_until([&] { return (w = child_of(s.opmeter)).has_value(); }, 30)) << slurp(log);
  if (!w) return;
  s.worker = *w;
  // Read once the worker has exec'ed (before, /proc shows opmeter's own environment).
  wait_until([&] { return !(s.private_dir = environ_of(s.worker, "OPMETER_PRIVATE_DIR")).empty(); }, 10);
  EXPECT_FALSE(s.private_dir.empty()) << "the worker was not told opmeter's private directory";
  EXPECT_TRUE(wait_until(stuck, 30)) << slurp(log);
}

}  // namespace

TEST(Interrupts, CtrlCWhileTheWorkerIsInSetupExits130AndStopsTheWorker) {
  auto dir = temp_dir("interrupt_setup");
  SpawnEnv env(kFakeWorker, "hang_on_setup");
  auto log = dir / "log";
  Started s;
  start_with_worker(s, "run --case relu/torch/fp32/batch=1,seq=4,hidden=256/threads=1 --no-report --out " +
                                 (dir / "res").string(),
                             log, [] { return true; });
  ASSERT_GT(s.worker, 0);
  // The case's inputs are written just before its setup request: then the worker sleeps.
  auto has_inputs = [&] {
    std::error_code ec;
    for (auto& d : fs::directory_iterator(s.private_dir, ec))
      if (fs::exists(d.path() / "in0", ec)) return true;
    return false;
  };
  ASSERT_TRUE(wait_until(has_inputs, 30)) << slurp(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = std::chrono::steady_clock::now();
  kill(s.opmeter, SIGINT);  // opmeter alone, as `kill -INT`: it must stop the worker itself
  auto code = exit_within(s.opmeter, 5);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(code.has_value()) << "opmeter ignored SIGINT while its worker was in setup\n" << slurp(log);
  EXPECT_EQ(*code, 130) << slurp(log);
  EXPECT_LT(took, 2.0);
  EXPECT_TRUE(wait_until([&] { return gone(s.worker); }, 2)) << "the worker outlived opmeter";
  EXPECT_FALSE(fs::exists(s.private_dir)) << s.private_dir;
}

namespace {
// opmeter running a case of a kernel whose import sleeps, 0.3 s into that import.
void start_in_sleepy_import(Started& s, const fs::path& dir, const fs::path& log) {
  start_with_worker(s, "run --kernel " + kSleepyKernel + " --case add/sleepy/fp32/batch=1,seq=8,hidden=64/threads=1 --out " +
                           (dir / "res").string(),
                    log, [] { return true; });
  if (s.worker > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
}
}  // namespace

TEST(Interrupts, CtrlCWhileAKernelImportsExits130) {
  auto dir = temp_dir("interrupt_import");
  SpawnEnv env("", "");
  auto log = dir / "log";
  Started s;
  start_in_sleepy_import(s, dir, log);
  ASSERT_GT(s.worker, 0);
  kill(s.opmeter, SIGTERM);
  auto code = exit_within(s.opmeter, 5);
  ASSERT_TRUE(code.has_value()) << "opmeter ignored SIGTERM while the worker imported a kernel\n" << slurp(log);
  EXPECT_EQ(*code, 143) << slurp(log);
  EXPECT_TRUE(wait_until([&] { return gone(s.worker); }, 2)) << "the worker outlived opmeter";
  EXPECT_FALSE(fs::exists(s.private_dir)) << s.private_dir;
}

TEST(Interrupts, AWorkerWhoseOpmeterIsKilledEndsAndRemovesTheTemporaryFiles) {
  auto dir = temp_dir("interrupt_kill");
  SpawnEnv env("", "");
  auto log = dir / "log";
  Started s;
  start_in_sleepy_import(s, dir, log);
  ASSERT_GT(s.worker, 0);
  kill(s.opmeter, SIGKILL);  // no handler runs: the worker must notice by itself
  EXPECT_EQ(wait_exit(s.opmeter), 128 + SIGKILL);
  bool ended = wait_until([&] { return gone(s.worker); }, 5);
  if (!ended) kill(s.worker, SIGKILL);
  EXPECT_TRUE(ended) << "the orphaned worker ran on";
  EXPECT_TRUE(wait_until([&] { return !fs::exists(s.private_dir); }, 2)) << s.private_dir;
}

TEST(Interrupts, AWorkerStartedThroughAWrapperEndsWhenItsOpmeterIsKilled) {
  // OPMETER_PYTHON a script that runs Python as its child (no exec): opmeter is the worker's
  // grandparent, and the wrapper outlives opmeter (adopted by init) while the worker runs.
  auto dir = temp_dir("interrupt_wrapper");
  const fs::path wrapper = dir / "python-wrapper";
  std::ofstream(wrapper) << "#!/bin/sh\n\"" << kPython << "\" \"$@\"\nexit $?\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  SpawnEnv env("", "");
  setenv("OPMETER_PYTHON", wrapper.c_str(), 1);
  auto log = dir / "log";
  Started s;
  s.opmeter = spawn("run --kernel " + kSleepyKernel +
                        " --case add/sleepy/fp32/batch=1,seq=8,hidden=64/threads=1 --out " + (dir / "res").string(),
                    log);
  std::optional<pid_t> shell, worker;
  ASSERT_TRUE(wait_until([&] { return (shell = child_of(s.opmeter)).has_value(); }, 30)) << slurp(log);
  ASSERT_TRUE(wait_until([&] { return (worker = child_of(*shell)).has_value(); }, 30)) << slurp(log);
  s.worker = *worker;
  wait_until([&] { return !(s.private_dir = environ_of(s.worker, "OPMETER_PRIVATE_DIR")).empty(); }, 10);
  ASSERT_FALSE(s.private_dir.empty()) << "the worker was not told opmeter's private directory";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the sleepy import, its watcher started
  kill(s.opmeter, SIGKILL);
  EXPECT_EQ(wait_exit(s.opmeter), 128 + SIGKILL);
  bool ended = wait_until([&] { return gone(s.worker); }, 5);
  if (!ended) kill(s.worker, SIGKILL);
  EXPECT_TRUE(ended) << "the worker under a wrapper ran on after its opmeter was killed";
  EXPECT_TRUE(wait_until([&] { return !fs::exists(s.private_dir); }, 2)) << s.private_dir;
  if (!gone(*shell)) kill(*shell, SIGKILL);
}

TEST(Interrupts, SigtermWhileAConfigPipeWaitsForItsWriterExits143) {
  auto dir = temp_dir("interrupt_fifo");
  const fs::path fifo = dir / "config.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto log = dir / "log";
  pid_t pid = spawn("run " + fifo.string() + " --dry-run", log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // blocked opening the pipe
  kill(pid, SIGTERM);
  auto code = exit_within(pid, 5);
  ASSERT_TRUE(code.has_value()) << "opmeter ignored SIGTERM while opening its config\n" << slurp(log);
  EXPECT_EQ(*code, 143) << slurp(log);
  EXPECT_EQ(slurp(log).find("cannot open the config file"), std::string::npos) << slurp(log);
}

TEST(Interrupts, PredictFitInterruptedExits130AndWritesNoModel) {
  auto dir = temp_dir("interrupt_fit");
  auto model = dir / "model.json";
  auto log = dir / "log";
  // SIGINT pending from the start (blocked until opmeter installs its handler): no race with how
  // fast the fit is.
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    kill(getpid(), SIGINT);
    freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), 2);
    execl(opmeter_testbin(), opmeter_testbin(), "predict", "fit", (dir / "none").c_str(), "-o", model.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  EXPECT_EQ(wait_exit(pid), 130) << slurp(log);
  EXPECT_FALSE(fs::exists(model));
}

TEST(Interrupts, FitModelStopsBetweenGroupsWhenInterrupted) {
  namespace fx = opmeter::predict::fixtures;
  interrupt_flag().store(true);
  EXPECT_THROW(predict::fit_model(fx::gemm_samples(12), fx::ceilings_map(), {}, predict::FitSettings{}), Interrupted);
  clear_interrupt();
}
