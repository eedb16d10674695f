#include "analysis/run_where.hpp"

#include <fmt/format.h>

namespace opmeter {

std::string run_part(const Case& c) {
  const std::string s = c.to_string();
  return s.substr(s.rfind('/') + 1);
}

std::string where_cell(const Case& c) {
  std::string out = c.on_host() ? fmt::format("cpu x{}", c.threads) : c.device;
  for (auto& [k, v] : c.settings) out += fmt::format(", {}={}", k, v);
  return c.hot ? out + ", hot" : out;
}

}  // namespace opmeter
