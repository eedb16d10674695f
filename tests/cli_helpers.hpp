#pragma once
// Running the CLI (the test binary, with test impls linked in) from tests.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tests/test_paths.hpp"

namespace fs = std::filesystem;

namespace {
struct Output {
  int code;
  std::string text;  // stdout and stderr
};

inline Output cli(const std::string& args) {
  std::string cmd = std::string(opmeter_testbin()) + " " + args + " 2>&1";
  Output out{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) out.text += buf.data();
  int status = pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The CLI as local rank 1 of a two-rank OpenMPI launch (its environment variables, then unset),
// and the devices ("device=...") of the planned cases whose lines start with `prefix`.
inline std::set<std::string> devices_as_rank_1_of_2(const std::string& args, const std::string& prefix) {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  Output out = cli(args);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  std::set<std::string> seen;
  if (out.code != 0) return {"exit " + std::to_string(out.code) + ": " + out.text};
  std::istringstream lines(out.text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(prefix, 0) == 0) seen.insert(line.substr(line.find("device=")));
  return seen;
}

inline fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("opmeter_cli_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

inline fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

}  // namespace

// --- processes that run beside the test (signals, two runs at once, resource limits) ----------
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <thread>

namespace {

// Starts the test binary in a process group of its own (as a shell job: a test can signal the
// group as a terminal does); its stdout and stderr go to `log`.
inline pid_t spawn(const std::string& args, const fs::path& log) {
  std::string cmd = "exec " + std::string(opmeter_testbin()) + " " + args + " > '" + log.string() + "' 2>&1";
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Runs the test binary with every file it writes limited to `max_file_bytes` (RLIMIT_FSIZE: a
// write past it fails with EFBIG, as on a full disk). Output comes through a pipe, which the
// limit does not cover.
inline Output cli_with_file_limit(const std::string& args, rlim_t max_file_bytes) {
  std::string cmd = "exec " + std::string(opmeter_testbin()) + " " + args + " 2>&1";
  int fds[2];
  if (pipe(fds) != 0) return {-1, "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 1);
    close(fds[1]);
    rlimit r{max_file_bytes, max_file_bytes};
    setrlimit(RLIMIT_FSIZE, &r);
    signal(SIGXFSZ, SIG_IGN);  // a failed write, not a killed process
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  Output out{-1, ""};
  std::array<char, 4096> buf{};
  ssize_t n;
  while ((n = read(fds[0], buf.data(), buf.size())) > 0) out.text.append(buf.data(), static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The exit code, or 128 + the signal that killed it.
inline int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline bool wait_until(const std::function<bool()>& done, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

inline std::size_t line_count(const fs::path& p) {
  std::ifstream f(p);
  std::size_t n = 0;
  std::string line;
  while (std::getline(f, line)) n += !line.empty();
  return n;
}

}  // namespace
