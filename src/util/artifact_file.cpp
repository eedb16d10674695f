#include "util/artifact_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "util/output_file.hpp"
#include "util/private_temp.hpp"

namespace opmeter {
namespace {
// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

void make_private_folder(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw output_error(dir, errno);
  // Made now or found there, it must pass the temporary directories' check: what another user
  // made, opened to others or linked elsewhere is refused, never used.
  if (auto why = why_not_private(dir); !why.empty())
    throw OutputError(fmt::format("cannot write into {}: {}; opmeter writes these files only into a private folder of "
                                  "its own (mode 700, this user's)", dir, why));
}

void write_private_file(const std::string& dir, const std::string& name, const std::string& content) {
  const std::string path = dir + "/" + name;
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw OutputError(fmt::format("cannot write {}: not a plain file name", path));
  Fd folder{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  if (folder.fd < 0) throw output_error(dir, errno == ELOOP ? ENOTDIR : errno);
  const std::string tmp = name + ".tmp";
  ::unlinkat(folder.fd, tmp.c_str(), 0);  // a leftover (or a planted link): removed, never followed
  int err = 0;
  {
    Fd file{::openat(folder.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (file.fd < 0) throw output_error(path, errno);
    err = write_all(file.fd, content.data(), content.size(), true);
  }
  // renameat replaces a link at `name` itself, never what it points to.
  if (!err && ::renameat(folder.fd, tmp.c_str(), folder.fd, name.c_str()) != 0) err = errno;
  if (err) {
    ::unlinkat(folder.fd, tmp.c_str(), 0);
    throw output_error(path, err);
  }
}

}  // namespace opmeter
