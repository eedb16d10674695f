#include "util/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

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
// Writes all of `content` to a new file at `path`, synced; OutputError (and no file) otherwise.
void write_new_file(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw output_error(path, errno);
  int err = write_all(fd, content.data(), content.size(), true);
  if (::close(fd) != 0 && !err) err = errno;
  if (err) {
    ::unlink(path.c_str());  // a half-written file helps no one and holds the space
    throw output_error(path, err);
  }
}
}  // namespace

void write_atomically(const std::string& path, const std::string& content) {
  auto tmp = path + ".tmp";
  write_new_file(tmp, content);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
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
