#include "opmeter/registry.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"

namespace opmeter {

Registry& Registry::global() {
  static Registry r;
  return r;
}

void Registry::add(OpDef op) {
  auto name = op.name;
  ops_.insert_or_assign(name, std::move(op));
}

void Registry::add(ImplDef impl) {
  auto key = std::make_pair(impl.op, impl.impl);
  impls_.insert_or_assign(key, std::move(impl));
}

const OpDef* Registry::op(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

const ImplDef* Registry::impl(const std::string& op, const std::string& impl) const {
  auto it = impls_.find({op, impl});
  return it == impls_.end() ? nullptr : &it->second;
}

std::vector<const ImplDef*> Registry::impls_of(const std::string& op) const {
  std::vector<const ImplDef*> out;
  for (auto& [key, def] : impls_)
    if (key.first == op) out.push_back(&def);
  return out;
}

std::vector<const OpDef*> Registry::ops() const {
  std::vector<const OpDef*> out;
  for (auto& [name, def] : ops_) out.push_back(&def);
  return out;
}

std::vector<std::string> Registry::impl_names() const {
  std::set<std::string> names;
  for (auto& [key, def] : impls_) names.insert(key.second);
  return {names.begin(), names.end()};
}

void validate_case(const Case& c) {
  auto& reg = Registry::global();
  const OpDef* op = reg.op(c.op);
  if (!op) {
    std::vector<std::string> names;
    for (auto* o : reg.ops()) names.push_back(o->name);
    throw UsageError(fmt::format("unknown op '{}' (known: {})", c.op, fmt::join(names, ", ")));
  }
  const ImplDef* impl = reg.impl(c.op, c.impl);
  if (!impl) {
    std::vector<std::string> names;
    for (auto* i : reg.impls_of(c.op)) names.push_back(i->impl);
    throw UsageError(fmt::format("op '{}' has no impl '{}' (known: {})", c.op, c.impl, fmt::join(names, ", ")));
  }
  bool cuda_impl = impl->backend == "cuda";
  if (cuda_impl != c.on_cuda())
    throw UsageError(fmt::format("{} impl '{}' runs on {}, not on {} (give {})", c.op, c.impl,
                                 cuda_impl ? "CUDA devices" : "the CPU", c.device,
                                 cuda_impl ? "device=cuda:N" : "threads=N"));
  for (auto& key : op->params)
    if (!c.has(key)) throw CaseError(fmt::format("case {} lacks parameter '{}'", c.to_string(), key));
  for (auto& [key, value] : c.params)
    if (std::find(op->params.begin(), op->params.end(), key) == op->params.end())
      throw CaseError(fmt::format("op '{}' has no parameter '{}' (takes: {})", c.op, key, fmt::join(op->params, ", ")));
  if (op->validate) op->validate(c);
}

}  // namespace opmeter
