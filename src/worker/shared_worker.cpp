#include "worker/shared_worker.hpp"

#include <cstdlib>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>

#include "util/env_seconds.hpp"
#include "util/private_temp.hpp"

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
