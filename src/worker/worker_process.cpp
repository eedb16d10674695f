#include "worker/worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "util/interrupt.hpp"
#include "worker/reply_fields.hpp"
#include "worker/worker_impls.hpp"

extern char** environ;

namespace opmeter::worker {
namespace {

constexpr std::size_t kStderrKeep = 4096;  // bytes of the worker's stderr kept for messages
constexpr std::size_t kStderrLines = 12;           // lines of it shown

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A worker that died makes writes to its stdin raise SIGPIPE, which would end opmeter: write()'s
// EPIPE says the same, and the next read reports how the worker ended.
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { signal(SIGPIPE, SIG_IGN); });
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// The worker and whatever it started (compiler processes of torch.compile): its process group.
void kill_group(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

// Whether `pid` (our child) has ended, leaving it to be reaped: until it is, its pid (and so its
// process group's id) cannot be taken by another process.
bool has_ended(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Waits up to `grace_s` for `pid` to end, then kills its group: the worker, if it lingers, and
// what it started and left behind (a forked helper holding its stdout). Its wait status.
int reap(pid_t pid, double grace_s) {
  auto t0 = Clock::now();
  while (!has_ended(pid) && since(t0) <= grace_s) poll(nullptr, 0, 5);
  kill_group(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Replies nest a few levels (details, the hello's impl table); a line nested deeper is no reply,
// and copying it would recurse once per level on opmeter's stack.
constexpr int kMaxReplyDepth = 64;
struct TooDeep {};

nlohmann::json parse_reply(const std::string& line) {
  return nlohmann::json::parse(line, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxReplyDepth) throw TooDeep{};
    return true;
  });
}

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

}  // namespace

WorkerProcess::WorkerProcess(std::vector<std::string> argv, double start_deadline_s, std::vector<std::string> extra_env) {
  ignore_sigpipe();
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    throw WorkerUnavailable(fmt::format("cannot make pipes for the worker: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // A group of its own: a terminal's Ctrl-C reaches opmeter alone, which then stops the worker
  // (and its group) itself instead of leaving it half-stopped by a KeyboardInterrupt.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  // The worker's own variables replace inherited ones of the same name (an opmeter run inside a
  // kernel inherits its parent's): with both, Python would keep the first, the stale one.
  auto set_here = [&](std::string_view entry) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) return false;
    return std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& e) { return e.compare(0, eq + 1, entry, 0, eq + 1) == 0; });
  };
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (!set_here(*e)) env.push_back(*e);
  for (auto& e : extra_env) env.push_back(e.data());
  env.push_back(nullptr);
  int spawned = posix_spawnp(&pid_, argv.at(0).c_str(), &actions, &attr, args.data(), env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  to_worker_ = in[1];
  from_worker_ = out[0];
  errors_ = err[0];
  if (spawned != 0) {
    pid_ = -1;
    close_fd(to_worker_);
    close_fd(from_worker_);
    close_fd(errors_);
    throw WorkerUnavailable(fmt::format("cannot start {}: {}", argv[0], std::strerror(spawned)));
  }
  std::string line;
  try {
    line = read_line(start_deadline_s, "its hello");
    hello_ = parse_reply(line);
  } catch (const TooDeep&) {
    kill_now();
    throw WorkerUnavailable(fmt::format("{} is not an opmeter worker: its first line nests deeper than {} levels",
                                        argv.back(), kMaxReplyDepth));
  } catch (const Interrupted&) {
    close_fd(to_worker_);
    close_fd(from_worker_);
    close_fd(errors_);
    throw;
  } catch (const nlohmann::json::exception&) {
    kill_now();
    throw WorkerUnavailable(fmt::format("{} is not an opmeter worker: its first line was '{}'", argv.back(), line.substr(0, 200)));
  } catch (const WorkerCrashed& e) {
    // Killed by a signal (a crash in an import, the OOM killer): `crashed`. An exit before the
    // hello is an interpreter that cannot run the worker (a missing module, an old Python): its
    // cases are skipped, with its stderr as the reason.
    if (killed_by_signal_) throw;
    throw WorkerUnavailable(e.what());
  }  // WorkerHung: no hello within the deadline, `timeout`
  if (!hello_.is_object() || !hello_.contains("hello") || hello_["hello"] != "opmeter-worker") {
    kill_now();
    throw WorkerUnavailable(fmt::format("{} is not an opmeter worker: its first line was '{}'", argv.back(), line.substr(0, 200)));
  }
  if (auto version = hello_.contains("protocol") ? hello_["protocol"] : nlohmann::json(); version != kProtocolVersion) {
    kill_now();
    if (!version.is_number_integer())
      throw std::runtime_error(
          fmt::format("the worker {} gives protocol {}, not a version number; this opmeter speaks version {}",
                      argv.back(), version.is_null() ? "(none)" : short_json(version, 40), kProtocolVersion));
    throw std::runtime_error(fmt::format("the worker {} speaks protocol version {}, this opmeter speaks version {}",
                                         argv.back(), version.get<std::int64_t>(), kProtocolVersion));
  }
  try {  // what is shown of the hello: the types the protocol gives it
    for (const char* key : {"python", "torch", "torch_why", "triton", "triton_why"})
      if (hello_.contains(key) && !hello_[key].is_null()) string_field(hello_, key, "hello");
  } catch (const BadReply& e) {
    kill_now();
    throw std::runtime_error(e.what());
  }
  if (auto note = announcement_note(hello_); !note.empty()) {
    static std::once_flag said;
    std::call_once(said, [&] { fmt::print(stderr, "opmeter: warning: {} ({})\n", note, argv.back()); });
  }
}

WorkerProcess::~WorkerProcess() {
  if (alive()) {
    std::string quit = "{\"cmd\":\"quit\"}\n";
    [[maybe_unused]] auto n = write(to_worker_, quit.data(), quit.size());
    close_fd(to_worker_);
    reap(pid_, 1.0);  // a worker that does not leave within a second is stopped
  }
  close_fd(to_worker_);
  close_fd(from_worker_);
  close_fd(errors_);
}

nlohmann::json WorkerProcess::request(const nlohmann::json& request, double deadline_s) {
  if (!alive()) throw WorkerCrashed(ended_.empty() ? "the worker is no longer running" : ended_);
  read_what_is_there();
  unrequested("before a request");  // each reply must answer its own request
  std::string line = request.dump() + "\n";
  for (std::size_t done = 0; done < line.size();) {
    ssize_t n = write(to_worker_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) died("its reply");  // EPIPE: it has gone; how it ended is in its exit status
    done += static_cast<std::size_t>(n);
  }
  std::string reply = read_line(deadline_s, "its reply");
  unrequested(fmt::format("after its reply to '{}'", request.value("cmd", "")));
  try {
    return parse_reply(reply);
  } catch (const TooDeep&) {
    kill_now();
    throw WorkerCrashed(
        fmt::format("the worker's reply nests deeper than {} levels: '{}'", kMaxReplyDepth, reply.substr(0, 80)));
  } catch (const nlohmann::json::exception&) {
    kill_now();
    throw WorkerCrashed(fmt::format("the worker replied with a line that is not JSON: '{}'", reply.substr(0, 200)));
  }
}

std::string WorkerProcess::read_line(double deadline_s, const char* waiting_for) {
  auto t0 = Clock::now();
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (interrupted()) {  // Ctrl-C or SIGTERM: no wait outlasts it (a setup may take 30 minutes)
      kill_now();
      throw Interrupted();
    }
    double left = deadline_s - since(t0);
    if (left <= 0) {
      kill_now();
      drain_stderr();
      throw WorkerHung(fmt::format("the worker did not send {} within {:.0f} s and was killed{}", waiting_for, deadline_s,
                                   stderr_.empty() ? "" : "; its stderr ended with:\n" + stderr_tail()));
    }
    pollfd fds[2] = {{from_worker_, POLLIN, 0}, {errors_, POLLIN, 0}};
    // A signal ends the poll early (EINTR); the tenth of a second bounds the wait when the signal
    // reached another thread.
    int ready = poll(fds, errors_ >= 0 ? 2 : 1, static_cast<int>(std::min(left, 0.1) * 1000) + 1);
    if (ready < 0 && errno != EINTR) died(waiting_for);
    if (errors_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) drain_stderr();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = read(from_worker_, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR)) died(waiting_for);
      if (n > 0) pending_.append(buf, static_cast<std::size_t>(n));
    } else if (has_ended(pid_)) {
      // Dead without closing its stdout: a process it forked holds it open, and no end of file
      // will come. What it wrote before it died is read; then how it ended is the answer.
      read_what_is_there();
      if (pending_.find('\n') == std::string::npos) died(waiting_for);
    }
  }
}

void WorkerProcess::unrequested(const std::string& when) {
  if (pending_.find_first_not_of(" \t\r\n") == std::string::npos) return;
  const std::string line = pending_.substr(0, pending_.find('\n'));
  kill_now();
  throw WorkerCrashed(
      fmt::format("the worker wrote a line {}, which no request asked for (one reply per request): '{}'", when,
                  line.substr(0, 200)));
}

void WorkerProcess::read_what_is_there() {
  char buf[65536];
  for (;;) {
    pollfd fd = {from_worker_, POLLIN, 0};
    if (poll(&fd, 1, 0) <= 0 || !(fd.revents & POLLIN)) return;
    ssize_t n = read(from_worker_, buf, sizeof buf);
    if (n <= 0) return;
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

void WorkerProcess::drain_stderr() {
  char buf[4096];
  while (errors_ >= 0) {
    pollfd fd = {errors_, POLLIN, 0};
    if (poll(&fd, 1, 0) <= 0 || !(fd.revents & (POLLIN | POLLHUP))) return;
    ssize_t n = read(errors_, buf, sizeof buf);
    if (n <= 0) {
      close_fd(errors_);
      return;
    }
    stderr_.append(buf, static_cast<std::size_t>(n));
    if (stderr_.size() > 2 * kStderrKeep) stderr_.erase(0, stderr_.size() - kStderrKeep);
  }
}

void WorkerProcess::died(const char* waiting_for) {
  // Its stdout closed: it is exiting. Wait for it (a worker that closed stdout but lives on is
  // stopped), then read what it said last.
  int status = reap(pid_, 2.0);
  pid_ = -1;
  killed_by_signal_ = WIFSIGNALED(status);
  drain_stderr();
  ended_ = fmt::format("the worker {} before sending {}{}", exit_text(status), waiting_for,
                       stderr_.empty() ? "" : "; its stderr ended with:\n" + stderr_tail());
  throw WorkerCrashed(ended_);
}

void WorkerProcess::kill_now() {
  if (!alive()) return;
  kill_group(pid_);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string WorkerProcess::stderr_tail() const {
  std::vector<std::string> lines;
  std::size_t from = 0;
  while (from < stderr_.size()) {
    std::size_t nl = stderr_.find('\n', from);
    if (nl == std::string::npos) nl = stderr_.size();
    if (nl > from) lines.push_back(stderr_.substr(from, nl - from));
    from = nl + 1;
  }
  std::size_t first = lines.size() > kStderrLines ? lines.size() - kStderrLines : 0;
  std::string out;
  for (std::size_t i = first; i < lines.size(); ++i) out += (out.empty() ? "" : "\n") + lines[i];
  return out;
}

}  // namespace opmeter::worker
