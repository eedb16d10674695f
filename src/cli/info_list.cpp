// `opmeter list` and `opmeter info`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "opmeter/context.hpp"
#include "opmeter/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/suites.hpp"

namespace opmeter {

int list_command() {
  auto& reg = Registry::global();
  fmt::print("ops and impls (availability on this machine):\n");
  for (auto* op : reg.ops()) {
    fmt::print("  {:<10} {}\n", op->name, op->summary);
    fmt::print("             params: {}\n", fmt::join(op->params, ", "));
    for (auto* impl : reg.impls_of(op->name)) {
      std::vector<std::string> dts;
      const bool cuda = impl->backend == "cuda";
      // Without the plugin or a GPU every dtype would repeat the same reason: say it once.
      std::string unavailable = !cuda                           ? ""
                                : !cuda::plugin()               ? cuda::load_reason()
                                : !cuda::plugin()->device(0).ok ? cuda::plugin()->device(0).reason
                                                                : "";
      if (!unavailable.empty()) {
        for (auto d : impl->dtypes) dts.emplace_back(to_string(d));
        fmt::print("    {:<10} [{}] {}\n               dtypes: {} (unavailable here: {})\n", impl->impl, impl->backend,
                   impl->summary, fmt::join(dts, ", "), unavailable);
        continue;
      }
      for (auto d : impl->dtypes) {
        // Probe availability on the op's example case in this dtype.
        Case probe;
        probe.op = op->name;
        probe.impl = impl->impl;
        probe.dtype = d;
        probe.params = op->example;
        if (cuda) probe.device = "cuda:0";
        auto s = impl->supports(probe);
        dts.push_back(fmt::format("{}{}", to_string(d), s.ok ? "" : " (unavailable: " + s.reason + ")"));
      }
      fmt::print("    {:<10} [{}] {}\n               dtypes: {}\n", impl->impl, impl->backend, impl->summary, fmt::join(dts, ", "));
    }
  }
  std::vector<std::string> dtypes;
  for (auto d : all_dtypes()) dtypes.emplace_back(to_string(d));
  fmt::print("dtypes: {}\n", fmt::join(dtypes, ", "));
  std::vector<std::string> suites;
  for (auto& [name, text] : builtin_suites()) suites.push_back(name);
  fmt::print("suites: {}\n", fmt::join(suites, ", "));
  return 0;
}

int info_command() {
  fmt::print("{}\n", machine_context().dump(2));
  return 0;
}

}  // namespace opmeter
