#include "util/env_seconds.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {

double seconds_setting(const std::string& name, const char* value, double fallback) {
  if (!value || !*value) return fallback;
  char* end = nullptr;
  const double s = std::strtod(value, &end);
  // strtod reads "inf" and "nan" too: an endless wait is not a setting (a stuck rank or worker
  // would hold the run forever).
  if (end == value || *end || !std::isfinite(s) || !(s > 0))
    throw UsageError(fmt::format("{}={} must be a number of seconds > 0", name, value));
  return s;
}

double env_seconds(const char* name, double fallback) { return seconds_setting(name, std::getenv(name), fallback); }

}  // namespace opmeter
