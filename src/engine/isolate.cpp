// Isolation: one case per child process (this binary re-executed), under a deadline.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "engine/run_settings.hpp"
#include "engine/stopping_settings.hpp"
#include "opmeter/context.hpp"
#include "engine/runner.hpp"
#include "util/private_temp.hpp"

extern char** environ;

namespace opmeter {
namespace {

std::vector<std::string> child_args(const Case& c, const RunOptions& o, const std::string& result_file) {
  std::vector<std::string> args = {o.self_exe, "run", "--case", c.to_string(), "--child-result", result_file,
          "--seed", std::to_string(o.seed)};
  for (auto& more : {stopping_args(o.stopping), run_setting_args(o)}) args.insert(args.end(), more.begin(), more.end());
  if (llc_bytes_overridden()) args.insert(args.end(), {"--llc-bytes", std::to_string(llc_bytes())});
  if (o.profile) args.push_back("--profile");
  if (o.memory_profile) args.push_back("--memory-profile");
  if (!o.profile_dir.empty()) args.insert(args.end(), {"--profile-dir", o.profile_dir});
  if (o.check_only) args.push_back("--check-only");
  for (auto& k : o.kernels) args.insert(args.end(), {"--kernel", k});
  for (auto& plugin : o.plugins) args.insert(args.end(), {"--plugin", plugin});
  return args;
}

bool cancelled(const std::atomic<bool>* cancel) { return cancel && cancel->load(); }

// Ctrl-C reaches the whole process group, so the child dies of SIGINT as the parent notices it.
// Such a child did not crash: its case was interrupted and --resume must run it again.
bool interrupted_with_parent(int sig, const std::atomic<bool>* cancel) {
  if (sig != SIGINT && sig != SIGTERM) return false;
  for (int i = 0; i < 20 && !cancelled(cancel); ++i)  // the parent's handler may run a moment later
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return cancelled(cancel);
}

}  // namespace

Result run_case_isolated(const Case& c, const RunOptions& o, const std::atomic<bool>* cancel) {
  namespace fs = std::filesystem;
  // In this process's private directory: a predictable name in /tmp could be a link planted there.
  auto result_file = (private_temp_dir() / fmt::format("child-{}.json", std::chrono::steady_clock::now().time_since_epoch().count()))
                         .string();
  auto args = child_args(c, o, result_file);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The child's standard output is its stderr: what a plugin prints must not land in opmeter's
  // tables (`opmeter run > table.md`); its result comes back in the file.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, o.self_exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return unmeasured_result(c, Status::error, fmt::format("cannot start {}: {}", o.self_exe, std::strerror(err)));

  double deadline = o.case_deadline_s > 0 ? o.case_deadline_s : 2 * o.stopping.timeout_s + 30;
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (cancelled(cancel)) {  // the parent alone was signalled: stop the child too
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fs::remove(result_file);
      return unmeasured_result(c, Status::error, kInterruptedReason);
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fs::remove(result_file);
      return unmeasured_result(c, Status::timeout,
                               fmt::format("no result within the {:g} s deadline; the child was killed", deadline));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFSIGNALED(status)) {
    fs::remove(result_file);
    int sig = WTERMSIG(status);
    if (interrupted_with_parent(sig, cancel)) return unmeasured_result(c, Status::error, kInterruptedReason);
    return unmeasured_result(c, Status::crashed, fmt::format("killed by signal {} ({})", sig, strsignal(sig)));
  }
  std::ifstream in(result_file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    fs::remove(result_file);
    return unmeasured_result(c, Status::crashed, fmt::format("exited with code {} without a result", WEXITSTATUS(status)));
  }
  fs::remove(result_file);
  try {
    auto r = result_from_json(nlohmann::json::parse(line));
    r.kase.label = c.label;  // the child knew the case by its string, which has no label
    return r;
  } catch (const std::exception& e) {
    return unmeasured_result(c, Status::crashed, fmt::format("unreadable result from the child: {}", e.what()));
  }
}

}  // namespace opmeter
