// opmeter's side of the CUDA impl declarations (cuda_impl.hpp): each becomes an ImplDef on the
// `cuda` backend, which the plugin makes; and the check that opmeter and a plugin agree.
#include "opmeter/cuda/cuda_impl.hpp"

#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace opmeter::cuda {
namespace {

std::string dtype_list(const std::vector<DType>& dtypes) {
  std::vector<std::string> names;
  for (DType d : dtypes) names.emplace_back(to_string(d));
  return fmt::format("{}", fmt::join(names, ","));
}

}  // namespace

ImplDef host_def(const CudaImpl& impl) {
  ImplDef def{.op = impl.op,
              .impl = impl.impl,
              .preference = impl.preference,
              .backends = {"cuda"},
              .summary = impl.summary,
              .dtypes = impl.dtypes,
              .needs = impl.needs,
              .accepts = impl.accepts};
  if (impl.supports) def.supports = impl.supports;
  return def;
}

void add_to_host_registry(CudaImpl impl) { Registry::global().add(host_def(impl)); }

std::vector<std::string> impl_table_mismatches(const std::vector<ImplDef>& host, const std::vector<ImplDef>& plugin) {
  using Key = std::pair<std::string, std::string>;
  std::map<Key, const ImplDef*> in_plugin;
  for (auto& def : plugin) in_plugin[{def.op, def.impl}] = &def;
  std::vector<std::string> out;
  for (auto& def : host) {
    auto it = in_plugin.find({def.op, def.impl});
    if (it == in_plugin.end()) {
      out.push_back(fmt::format("{}/{}: declared in opmeter, not in the plugin", def.op, def.impl));
      continue;
    }
    const ImplDef& p = *it->second;
    if (p.dtypes != def.dtypes)
      out.push_back(fmt::format("{}/{}: dtypes {} in opmeter, {} in the plugin", def.op, def.impl, dtype_list(def.dtypes),
                                dtype_list(p.dtypes)));
    if (p.summary != def.summary || p.needs != def.needs || p.accepts != def.accepts)
      out.push_back(fmt::format("{}/{}: summary or optional parameters differ between opmeter and the plugin", def.op, def.impl));
    in_plugin.erase(it);
  }
  for (auto& [key, def] : in_plugin)
    out.push_back(fmt::format("{}/{}: in the plugin, not declared in opmeter", key.first, key.second));
  return out;
}

}  // namespace opmeter::cuda
