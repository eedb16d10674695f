#include "opmeter/errors.hpp"

#include <fmt/format.h>

namespace opmeter {

ConfigError::ConfigError(std::string file_, int line_, int column_, const std::string& message)
    : UsageError(line_ > 0 ? fmt::format("{}:{}:{}: {}", file_, line_, column_, message)
                           : fmt::format("{}: {}", file_, message)),
      file(std::move(file_)), line(line_), column(column_), detail(message) {}

}  // namespace opmeter
