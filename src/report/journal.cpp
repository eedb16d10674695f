#include "report/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "opmeter/errors.hpp"

namespace opmeter {

Journal::Journal(const std::string& path, WriteFn write)
    : path_(path), write_(write ? std::move(write) : WriteFn(::write)) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);  // a link there: ELOOP
  if (fd_ < 0) throw output_error(path, errno);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const std::string& line) {
  const std::string data = line + "\n";
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write_(fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : ENOSPC;
      if (end >= 0 && ::ftruncate(fd_, end) != 0) {}  // best effort: drop the torn line
      throw output_error(path_, err);
    }
    done += static_cast<std::size_t>(n);
  }
  // A finished case must survive a crash of the machine, not only of opmeter.
  if (::fdatasync(fd_) != 0 && errno != EINVAL) throw output_error(path_, errno);
}

}  // namespace opmeter
