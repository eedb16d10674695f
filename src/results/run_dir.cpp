#include "results/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"

namespace opmeter {
namespace fs = std::filesystem;

namespace {

// Names of what is in `dir` besides the lock file, a few of them.
std::string other_entries(const std::string& dir) {
  std::string names;
  int count = 0;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    auto name = e.path().filename().string();
    if (name == kLockFile) continue;
    if (++count <= 3) names += (names.empty() ? "" : ", ") + name;
  }
  if (count > 3) names += fmt::format(" and {} more", count - 3);
  return names;
}

}  // namespace

RunDirectory::RunDirectory(const std::string& dir, bool resume) : dir_(dir) {
  std::error_code ec;
  if (resume && !fs::is_directory(dir, ec)) throw UsageError(fmt::format("--resume {}: no such results directory", dir));
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw UsageError(fmt::format("results directory {}: exists and is not a directory", dir));
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("cannot create results directory {}: {}", dir, ec.message()));
  auto lock = file(kLockFile);
  const bool had_lock = fs::exists(fs::symlink_status(lock, ec));
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);  // a link there: ELOOP
  if (lock_fd_ < 0) throw output_error(lock, errno);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    auto holder = read_first_line(lock);
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw UsageError(fmt::format("results directory {} is in use by another opmeter run{}: wait for it, or give "
                                 "another --out",
                                 dir, holder.empty() ? "" : " (pid " + holder + ")"));
  }
  if (!resume) {
    auto others = other_entries(dir);
    if (!others.empty()) {
      // A folder of the user's own keeps no trace of the refusal; one that holds a run is told how to go on.
      const bool holds_run = fs::exists(file(kRunFile), ec) || fs::exists(file("results.jsonl"), ec);
      ::close(lock_fd_);
      lock_fd_ = -1;
      if (!had_lock) fs::remove(lock, ec);
      throw UsageError(fmt::format(
          "results directory {} is not empty ({}): a new run needs an empty or new "
          "directory; {}",
          dir, others,
          holds_run ? fmt::format("continue the run there with --resume {}", dir) : std::string("give another --out")));
    }
  }
  // Who holds the lock, for the message another run gets.
  auto pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    throw output_error(lock, errno ? errno : ENOSPC);
}

RunDirectory::~RunDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock; the file stays (removing it would race)
}

std::string RunDirectory::file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

std::optional<nlohmann::json> stored_run_settings(const std::string& dir, std::string* file) {
  for (auto [name, pointer] : {std::pair{kRunFile, "/run"}, {"results.json", "/context/run"}}) {
    const fs::path path = fs::path(dir) / name;
    std::error_code ec;
    const auto type = fs::status(path, ec).type();
    if (type == fs::file_type::not_found) continue;
    if (ec) throw UsageError(fmt::format("{}: cannot read it: {}", path.string(), ec.message()));
    if (type != fs::file_type::regular)  // a directory opens, and its first read throws
      throw UsageError(
          fmt::format("{}: is not a file (a directory?); expected the run settings opmeter run writes", path.string()));
    std::ifstream f(path);
    if (!f) continue;
    auto j = nlohmann::json::parse(f, nullptr, false);
    nlohmann::json::json_pointer p(pointer);
    if (!j.is_discarded() && j.contains(p) && j[p].is_object()) {
      if (file) *file = path.string();
      return j[p];
    }
  }
  return std::nullopt;
}

}  // namespace opmeter
