#include "engine/element_types.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/op_spec.hpp"
#include "opmeter/registry.hpp"

namespace opmeter {

std::string element_types(const Case& c) {
  const OpDef* op = Registry::global().op(c.op);
  if (!op || !op->spec) return "";
  try {
    auto spec = op->spec();
    spec->bind(c);
    std::vector<std::string> inputs;
    const auto descs = spec->inputs();
    for (std::size_t k = 0; k < descs.size(); ++k) {
      auto held = spec->held_as(k);
      inputs.push_back(
          fmt::format("{} {}{}", descs[k].name, elem_name(descs[k].elem), held.empty() ? "" : " (as " + held + ")"));
    }
    auto out = spec->output();
    return fmt::format("{} -> {} {}", fmt::join(inputs, ", "), out.name, elem_name(out.elem));
  } catch (const std::exception&) {
    return "";
  }
}

std::string element_types_compared(const std::string& types) {
  std::string out;
  for (std::size_t at = 0; at < types.size();) {
    const auto open = types.find(" (as ", at);
    if (open == std::string::npos) return out + types.substr(at);
    out += types.substr(at, open - at);
    const auto close = types.find(')', open);
    if (close == std::string::npos) return out;
    at = close + 1;
  }
  return out;
}

}  // namespace opmeter
