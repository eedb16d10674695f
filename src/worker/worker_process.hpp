#pragma once
// A worker process driven over pipes by the protocol of docs/worker-protocol.md: one JSON line per
// request and per reply. It keeps the last lines of the worker's stderr for messages, and turns a
// worker that dies or hangs into an exception the runner records as `crashed` / `timeout`.
#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/op.hpp"

namespace opmeter::worker {

inline constexpr int kProtocolVersion = 1;

// The worker could not be started (no interpreter, or one that exits before its hello): its
// cases are skipped with this reason.
struct WorkerUnavailable : Unsupported {
  using Unsupported::Unsupported;
};
// The worker exited or was killed while opmeter waited for a reply.
struct WorkerCrashed : ImplCrashed {
  using ImplCrashed::ImplCrashed;
};
// The worker did not reply within the deadline (it has been killed).
struct WorkerHung : ImplHung {
  using ImplHung::ImplHung;
};

class WorkerProcess {
 public:
  // Starts `argv` (argv[0] looked up on the PATH; `extra_env` "NAME=value" added to opmeter's
  // environment) in a process group of its own, and reads its hello within `start_deadline_s`.
  // Throws WorkerUnavailable when it cannot be started, exits or says no hello; WorkerCrashed
  // when a signal kills it before its hello, WorkerHung when none comes within the deadline; and
  // std::runtime_error naming both versions when it speaks another protocol.
  WorkerProcess(std::vector<std::string> argv, double start_deadline_s, std::vector<std::string> extra_env = {});
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends `request` and returns the reply. Throws WorkerCrashed / WorkerHung, and Interrupted on
  // Ctrl-C or SIGTERM (opmeter/interrupt.hpp) while it waits (the worker is then dead: alive() is
  // false).
  nlohmann::json request(const nlohmann::json& request, double deadline_s);
  bool alive() const { return pid_ > 0; }
  const nlohmann::json& hello() const { return hello_; }
  // The last lines the worker wrote to stderr.
  std::string stderr_tail() const;

 private:
  // The next line of stdout, reading stderr meanwhile; throws as request() does.
  std::string read_line(double deadline_s, const char* waiting_for);
  void drain_stderr();
  // What the worker's stdout holds now, into pending_, without waiting.
  void read_what_is_there();
  // Throws WorkerCrashed (the worker killed) when pending_ holds a line no request asked for.
  void unrequested(const std::string& when);
  [[noreturn]] void died(const char* waiting_for);
  void kill_now();

  pid_t pid_ = -1;
  bool killed_by_signal_ = false;  // how it ended, when it died (died())
  std::string ended_;              // how it ended, said again to a request after its death
  int to_worker_ = -1, from_worker_ = -1, errors_ = -1;
  std::string pending_;  // stdout read past the last line
  std::string stderr_;   // its tail
  nlohmann::json hello_;
};

}  // namespace opmeter::worker
