#include "opmeter/errors.hpp"

#include <cstring>

#include <fmt/format.h>

namespace opmeter {

OutputError output_error(const std::string& path, int err) {
  return OutputError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
}

ConfigError::ConfigError(std::string file_, int line_, int column_, const std::string& message)
    : UsageError(line_ > 0 ? fmt::format("{}:{}:{}: {}", file_, line_, column_, message)
                           : fmt::format("{}: {}", file_, message)),
      file(std::move(file_)), line(line_), column(column_), detail(message) {}

}  // namespace opmeter
