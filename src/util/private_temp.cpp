#include "util/private_temp.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "util/output_file.hpp"

namespace opmeter {
namespace {
namespace fs = std::filesystem;

// mkdtemp's directory, checked as lstat sees it: a directory (not a link), ours, 0700.
void check_private(const fs::path& dir) {
  if (auto why = why_not_private(dir); !why.empty())
    throw std::runtime_error(fmt::format("{} is not a private directory of this user: {}", dir.string(), why));
}

fs::path make_dtemp(const fs::path& parent, const std::string& prefix) {
  std::string pattern = (parent / (prefix + "XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw std::runtime_error(fmt::format("cannot make a private directory in {}: {}", parent.string(), std::strerror(errno)));
  fs::path dir(buf.data());
  check_private(dir);
  return dir;
}

fs::path shared_base() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  return fs::temp_directory_path(ec);
}

// Removes the directory at exit (a normal exit or an interrupted run's exit 130), only in the
// process that made it (not in a child that forked without exec).
struct OwnedDir {
  fs::path path;
  pid_t owner = getpid();
  ~OwnedDir() {
    std::error_code ec;
    if (getpid() == owner && !path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

std::string why_not_private(const fs::path& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return fmt::format("cannot inspect it: {}", std::strerror(errno));
  if (S_ISLNK(st.st_mode)) return "it is a link";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != geteuid()) return fmt::format("it is owned by user {}, not by this user ({})", st.st_uid, geteuid());
  if ((st.st_mode & 0777) != 0700) return fmt::format("its mode is {:o}, not 700", st.st_mode & 0777);
  return "";
}

const fs::path& private_temp_dir() {
  static std::once_flag once;
  static OwnedDir dir;
  std::call_once(once, [] {
    fs::path base = shared_base();
    remove_stale_private_dirs(base);
    dir.path = make_dtemp(base, fmt::format("{}{}-", kPrivateDirPrefix, getpid()));
  });
  return dir.path;
}

fs::path make_private_subdir(const std::string& prefix) {
  const fs::path& parent = private_temp_dir();
  check_private(parent);  // still ours: nobody else can have made anything in it
  return make_dtemp(parent, prefix);
}

void write_new_file(const fs::path& path, const void* data, std::size_t bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
  if (int err = write_all(fd, data, bytes, false)) {
    close(fd);
    throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(err)));
  }
  if (close(fd) != 0) throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
}

std::size_t remove_stale_private_dirs(const fs::path& base) {
  std::size_t removed = 0;
  std::error_code ec;
  const std::string prefix = kPrivateDirPrefix;
  for (auto& entry : fs::directory_iterator(base, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '-') continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running (or not ours to ask)
    struct stat st {};
    if (lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    if (fs::remove_all(entry.path(), ec) > 0) ++removed;
  }
  return removed;
}

}  // namespace opmeter
