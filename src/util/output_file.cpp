#include "util/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {

int write_all(int fd, const void* data, std::size_t bytes, bool sync) {
  const char* p = static_cast<const char*>(data);
  for (std::size_t done = 0; done < bytes;) {
    ssize_t n = ::write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    done += static_cast<std::size_t>(n);
  }
  if (sync && ::fdatasync(fd) != 0 && errno != EINVAL) return errno;  // EINVAL: a file that cannot be synced
  return 0;
}

namespace {
// The process's umask, from /proc (umask() reads it only by setting it, which would give any file
// another thread creates meanwhile the wrong mode); 022 where /proc does not say.
mode_t process_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 022;
}

// Writes all of `content` to a new temporary file beside `path` (a name no other file has, made
// by mkostemps: never an existing file or a link planted there), synced, with the mode a new file
// gets; returns its name. OutputError (and no file) otherwise.
std::string write_temporary(const std::string& path, const std::string& content) {
  // Hidden, beside the file, its name cut to 100 bytes: the suffix must not push a long name past
  // the file system's limit.
  const auto slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = path.substr(folder.size()).substr(0, 100);
  std::string name = folder + "." + base + ".XXXXXX.tmp";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  int fd = ::mkostemps(buf.data(), 4, O_CLOEXEC);
  if (fd < 0) throw output_error(path, errno);
  name.assign(buf.data());
  int err = ::fchmod(fd, 0666 & ~process_umask()) != 0 ? errno : 0;
  if (!err) err = write_all(fd, content.data(), content.size(), true);
  if (::close(fd) != 0 && !err) err = errno;
  if (err) {
    ::unlink(name.c_str());  // a half-written file helps no one and holds the space
    throw output_error(path, err);
  }
  return name;
}

// `-o /dev/null`, `-o /dev/stdout`, a named pipe: written into as they are, never replaced.
void write_into_stream(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);  // a redirected stdout: after what is there
  if (fd < 0) throw output_error(path, errno);
  int err = write_all(fd, content.data(), content.size(), false);
  if (::close(fd) != 0 && !err) err = errno;
  if (err) throw output_error(path, err);
}
}  // namespace

bool is_stream(const std::string& path) {
  if (path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0) return true;
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

void write_atomically(const std::string& path, const std::string& content) {
  if (is_stream(path)) return write_into_stream(path, content);
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw OutputError(fmt::format("cannot write {}: it exists and is not a regular file", path));
  const std::string tmp = write_temporary(path, content);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {  // a link at `path` is replaced, never followed
    int err = errno;
    ::unlink(tmp.c_str());
    throw output_error(path, err);
  }
}

std::string dump_json(const nlohmann::json& j, int indent) {
  // Paths and names from the user may not be UTF-8: show them with U+FFFD rather than fail.
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace opmeter
