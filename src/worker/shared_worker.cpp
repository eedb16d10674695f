#include "worker/shared_worker.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "util/env_seconds.hpp"
#include "util/private_temp.hpp"
#include "worker/user_kernels.hpp"
#include "worker/worker_impls.hpp"

namespace opmeter::worker {
namespace {

std::string env_or(const char* name, const std::string& otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? v : otherwise;
}

}  // namespace

double deadline_s(Wait wait) {
  double fallback = 300;
  switch (wait) {
    case Wait::start: fallback = 120; break;   // importing PyTorch from a cold disk
    case Wait::setup: fallback = 1800; break;  // torch.compile(mode="max-autotune") tries many kernels
    case Wait::call: fallback = 300; break;
  }
  return env_seconds("OPMETER_WORKER_DEADLINE", fallback);
}

std::vector<std::string> worker_command() {
  return {env_or("OPMETER_PYTHON", "python3"), "-u", env_or("OPMETER_WORKER", OPMETER_WORKER_SCRIPT)};
}

namespace {
std::unique_ptr<WorkerProcess>& the_worker() {
  static std::unique_ptr<WorkerProcess> worker;
  return worker;
}
}  // namespace

void stop_shared_worker() { the_worker().reset(); }

namespace {

// What is wrong with `path` as a program to run, or "".
std::string not_runnable(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "no such file";
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode) || access(path.c_str(), X_OK) != 0) return "is not an executable file";
  return "";
}

// What is wrong with OPMETER_PYTHON=`value` as the worker's interpreter, or "": a path (with a
// '/') must be an executable file; a bare name is looked up on the PATH, as posix_spawnp does.
std::string python_problem(const std::string& value) {
  if (value.find('/') != std::string::npos) return not_runnable(value);
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (not_runnable((dir.empty() ? "." : dir) + "/" + value).empty()) return "";
  return "not found on the PATH";
}

}  // namespace

bool runs_in_worker(const Case& c) {
  if (is_user_kernel(c.impl)) return true;
  const auto& impls = impl_table().at("impls");
  return std::any_of(impls.begin(), impls.end(),
                     [&](const nlohmann::json& i) { return i.value("impl", "") == c.impl; });
}

void check_worker_environment(const std::vector<Case>& cases) {
  const auto first = std::find_if(cases.begin(), cases.end(), runs_in_worker);
  if (first == cases.end()) return;
  const std::string why = fmt::format("cases such as {} run in the worker", first->to_string());
  try {
    deadline_s(Wait::call);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{} ({})", e.what(), why));
  }
  if (const char* python = std::getenv("OPMETER_PYTHON"); python && *python)
    if (auto problem = python_problem(python); !problem.empty())
      throw UsageError(
          fmt::format("OPMETER_PYTHON={}: {} ({}); set it to a Python 3 with PyTorch, or unset it to run "
                      "python3 from the PATH",
                      python, problem, why));
  if (const char* script = std::getenv("OPMETER_WORKER"); script && *script) {
    struct stat st {};
    if (stat(script, &st) != 0 || !S_ISREG(st.st_mode))
      throw UsageError(fmt::format("OPMETER_WORKER={}: {} ({}); unset it to run opmeter's worker ({})", script,
                                   stat(script, &st) != 0 ? "no such file" : "is not a file", why,
                                   OPMETER_WORKER_SCRIPT));
  }
}

WorkerProcess& shared_worker() {
  auto& worker = the_worker();
  if (!worker || !worker->alive()) {
    worker.reset();
    // The worker watches its parent: when opmeter is killed (SIGKILL leaves opmeter no chance to
    // stop it) it removes opmeter's private directory and exits, rather than run on orphaned.
    worker = std::make_unique<WorkerProcess>(worker_command(), deadline_s(Wait::start),
                                             std::vector<std::string>{fmt::format("OPMETER_PARENT_PID={}", getpid()),
                                                                      "OPMETER_PRIVATE_DIR=" + private_temp_dir().string()});
  }
  return *worker;
}

}  // namespace opmeter::worker
