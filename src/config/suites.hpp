#pragma once
#include <map>
#include <string>

namespace opmeter {
// Built-in suites by name (`quick`, `full`, ...): YAML text compiled in from suites/*.yaml.
const std::map<std::string, std::string>& builtin_suites();
}  // namespace opmeter
