#include "util/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "opmeter/errors.hpp"

namespace opmeter {

namespace {
// Writes all of `content` to a new file at `path`, synced; OutputError (and no file) otherwise.
void write_new_file(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw output_error(path, errno);
  std::size_t done = 0;
  int err = 0;
  while (done < content.size() && !err) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : ENOSPC;
    else done += static_cast<std::size_t>(n);
  }
  if (!err && ::fdatasync(fd) != 0 && errno != EINVAL) err = errno;
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
