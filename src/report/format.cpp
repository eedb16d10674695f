#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "report/reporters.hpp"

namespace opmeter {

std::string human_time(double s) {
  if (!(s > 0)) return "-";
  if (s < 1e-6) return fmt::format("{:.1f} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.2f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

std::string human_bytes(double b) {
  if (!(b >= 0)) return "-";
  if (b >= double(1 << 30)) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (b >= double(1 << 20)) return fmt::format("{:.2f} MiB", b / (1 << 20));
  if (b >= double(1 << 10)) return fmt::format("{:.2f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

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
