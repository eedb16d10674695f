#include "worker/worker_impls.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "worker/worker_impl.hpp"

namespace opmeter::worker {

const nlohmann::json& impl_table() {
  static const nlohmann::json table = nlohmann::json::parse(built_in_impl_table());
  return table;
}

std::vector<ImplDef> impl_defs(const nlohmann::json& table, const std::vector<std::string>& known) {
  std::vector<ImplDef> out;
  try {
    for (const auto& entry : table.at("impls")) {
      const std::string impl = entry.at("impl");
      for (const auto& [op, dtype_set] : table.at("op_sets").at(entry.at("ops").get<std::string>()).items()) {
        if (std::find(known.begin(), known.end(), op) == known.end()) continue;
        std::vector<DType> dtypes;
        for (const auto& name : table.at("dtype_sets").at(dtype_set.get<std::string>())) {
          auto d = parse_dtype(name.get<std::string>());
          if (!d) throw std::runtime_error(fmt::format("unknown dtype {} in dtype set {}", name.dump(), dtype_set.dump()));
          dtypes.push_back(*d);
        }
        out.push_back(ImplDef{
            .op = op,
            .impl = impl,
            .backends = entry.at("devices").get<std::vector<std::string>>(),
            .summary = entry.at("summary"),
            .dtypes = std::move(dtypes),
            .make = [] { return std::make_unique<WorkerImpl>(); },
            .on_request = true,
            .needs = entry.value("needs", std::vector<std::string>{}),
            .accepts = entry.contains("accepts")
                           ? table.at("param_sets").at(entry.at("accepts").get<std::string>()).get<std::vector<std::string>>()
                           : std::vector<std::string>{},
        });
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("the worker's impl table (worker/impls.json) is malformed: {}", e.what()));
  }
  return out;
}

std::string announcement_note(const nlohmann::json& hello) {
  if (!hello.is_object() || !hello.contains("impls") || hello["impls"] == impl_table()) return "";
  return "the worker announces impls other than those this opmeter was built with (worker/impls.json changed since the "
         "build): rebuild opmeter to list and plan them";
}

namespace {
const LateImplRegistrar reg([] {
  std::vector<std::string> known;
  for (const OpDef* op : Registry::global().ops())
    if (op->spec) known.push_back(op->name);  // an op without a spec cannot be sent to the worker
  return impl_defs(impl_table(), known);
});
}  // namespace

}  // namespace opmeter::worker
