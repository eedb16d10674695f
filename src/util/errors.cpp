#include "opmeter/errors.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace opmeter {

OutputError output_error(const std::string& path, int err) {
  if (err == ELOOP)  // O_NOFOLLOW met a link
    return OutputError(fmt::format("cannot write {}: it is a symbolic link, and opmeter does not write through links", path));
  return OutputError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
}

ConfigError::ConfigError(std::string file_, int line_, int column_, const std::string& message)
    : UsageError(line_ > 0 ? fmt::format("{}:{}:{}: {}", file_, line_, column_, message)
                           : fmt::format("{}: {}", file_, message)),
      file(std::move(file_)), line(line_), column(column_), detail(message) {}

}  // namespace opmeter
