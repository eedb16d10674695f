#include "analysis/run_where.hpp"

#include <fmt/format.h>

namespace opmeter {

std::string machine_of(const Result& r) {
  auto it = r.details.find(kMachineDetail);
  return it == r.details.end() ? std::string() : it->second;
}

std::string run_part(const Result& r) {
  const std::string s = r.kase.to_string(), machine = machine_of(r);
  return s.substr(s.rfind('/') + 1) + (machine.empty() ? "" : " on " + machine);
}

std::string where_cell(const Result& r) {
  const Case& c = r.kase;
  std::string out = c.on_host() ? fmt::format("cpu x{}", c.threads) : c.device;
  for (auto& [k, v] : c.settings) out += fmt::format(", {}={}", k, v);
  if (c.hot) out += ", hot";
  if (auto machine = machine_of(r); !machine.empty()) out += ", on " + machine;
  return out;
}

}  // namespace opmeter
