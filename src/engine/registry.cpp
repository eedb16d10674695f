#include "opmeter/registry.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/backend.hpp"
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

void Registry::set_spec(const std::string& op, std::function<std::unique_ptr<OpSpec>()> spec) {
  ops_.at(op).spec = std::move(spec);
}

const OpDef* Registry::op(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

namespace {
std::vector<std::function<std::vector<ImplDef>()>>& late_impls() {
  static std::vector<std::function<std::vector<ImplDef>()>> all;
  return all;
}
}  // namespace

void add_late_impls(std::function<std::vector<ImplDef>()> make) { late_impls().push_back(std::move(make)); }

void Registry::add_backend_impls() const {
  // A backend's impls() that looks an impl up sees those registered so far (instead of waiting
  // on the call_once it is inside).
  static thread_local bool adding = false;
  if (adding) return;
  std::call_once(backend_impls_, [this] {
    adding = true;
    for (auto* b : backends())
      for (auto& def : b->impls()) impls_.insert_or_assign({def.op, def.impl}, std::move(def));
    for (auto& make : late_impls())
      for (auto& def : make()) impls_.insert_or_assign({def.op, def.impl}, std::move(def));
    adding = false;
  });
}

const ImplDef* Registry::impl(const std::string& op, const std::string& impl) const {
  add_backend_impls();
  auto it = impls_.find({op, impl});
  return it == impls_.end() ? nullptr : &it->second;
}

std::vector<const ImplDef*> Registry::impls_of(const std::string& op) const {
  add_backend_impls();
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
  add_backend_impls();
  std::set<std::string> names;
  for (auto& [key, def] : impls_) names.insert(key.second);
  return {names.begin(), names.end()};
}

std::vector<Params> check_shapes_of(const OpDef& op) {
  return op.check_shapes.empty() ? std::vector<Params>{op.example} : op.check_shapes;
}

CeilingKind ceiling_of(const std::string& name) {
  const OpDef* op = Registry::global().op(name);
  return op ? op->ceiling : CeilingKind::none;
}

namespace {
const OptionalParam* optional_param(const OpDef& op, const std::string& key) {
  for (auto& o : op.optional_params)
    if (o.key == key) return &o;
  return nullptr;
}

bool named(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

bool takes(const ImplDef& impl, const OpDef& op, const Case& c) {
  for (auto& key : impl.needs)
    if (!c.has(key)) return false;
  for (auto& [key, value] : c.params)
    if (optional_param(op, key) && !named(impl.needs, key) && !named(impl.accepts, key)) return false;
  return true;
}
}  // namespace

Support takes_optional_params(const ImplDef& impl, const Case& c) {
  const OpDef* op = Registry::global().op(c.op);
  if (!op || takes(impl, *op, c)) return Support::yes();
  std::vector<std::string> carried, others;
  for (auto& [key, value] : c.params)
    if (optional_param(*op, key)) carried.push_back(key + "=" + value);
  for (auto* other : Registry::global().impls_of(c.op))
    if (takes(*other, *op, c)) others.push_back(other->impl);
  std::string what = carried.empty() ? fmt::format("cases without {}", fmt::join(impl.needs, ", "))
                                     : fmt::format("{}", fmt::join(carried, ", "));
  return Support::no(fmt::format("{} impl '{}' does not run {}{}", c.op, c.impl, what,
                                 others.empty() ? std::string() : fmt::format(" (impls that do: {})", fmt::join(others, ", "))));
}

void put_params_in_op_order(Case& c) {
  const OpDef* op = Registry::global().op(c.op);
  if (!op) return;
  auto rank = [&](const std::string& key) {
    auto it = std::find(op->params.begin(), op->params.end(), key);
    if (it != op->params.end()) return it - op->params.begin();
    auto opt = std::find_if(op->optional_params.begin(), op->optional_params.end(), [&](auto& o) { return o.key == key; });
    return static_cast<std::ptrdiff_t>(op->params.size()) + (opt - op->optional_params.begin());  // unknown ones last
  };
  std::stable_sort(c.params.begin(), c.params.end(), [&](auto& a, auto& b) { return rank(a.first) < rank(b.first); });
}

void validate_case(const Case& c) {
  auto& reg = Registry::global();
  const OpDef* op = reg.op(c.op);
  if (!op) {
    std::vector<std::string> names;
    for (auto* o : reg.ops()) names.push_back(o->name);
    throw UsageError(fmt::format("unknown op '{}' (known: {})", c.op, fmt::join(names, ", ")));
  }
  for (auto& key : op->params)
    if (!c.has(key)) throw CaseError(fmt::format("case {} lacks parameter '{}'", c.to_string(), key));
  for (auto& [key, value] : c.params) {
    if (std::find(op->params.begin(), op->params.end(), key) != op->params.end()) continue;
    const OptionalParam* optional = optional_param(*op, key);
    if (!optional) {
      auto takes = op->params;
      for (auto& o : op->optional_params) takes.push_back(o.key);
      throw CaseError(fmt::format("op '{}' has no parameter '{}' (takes: {})", c.op, key, fmt::join(takes, ", ")));
    }
    if (value == optional->absent)
      throw CaseError(fmt::format("{}={} is the default: leave it out of the case", key, value));
    // The values a config is checked against hold for a case string too, for every op.
    if (!optional->values.empty() && std::find(optional->values.begin(), optional->values.end(), value) == optional->values.end())
      throw CaseError(fmt::format("{}={} unknown: expected one of {}", key, value, fmt::join(optional->values, ", ")));
  }
  if (op->validate) op->validate(c);

  Backend& backend = backend_of(c);
  const ImplDef* impl = reg.impl(c.op, c.impl);
  if (!impl) {
    std::vector<std::string> names;
    for (auto* i : reg.impls_of(c.op)) names.push_back(i->impl);
    throw UsageError(fmt::format("op '{}' has no impl '{}' (known: {})", c.op, c.impl, fmt::join(names, ", ")));
  }
  if (!impl->runs_on(backend.name())) {
    Backend* runs_on = backend_named(impl->backends.front());
    if (!runs_on)
      throw UsageError(fmt::format("{} impl '{}' runs on backend '{}', which this opmeter lacks", c.op, c.impl, impl->backends_text()));
    const bool host = runs_on->owns(kHostDevice);
    throw UsageError(fmt::format("{} impl '{}' runs on {}, not on {} (give {})", c.op, c.impl, runs_on->description(),
                                 c.device, host ? "threads=N" : "device=" + runs_on->device_grammar()));
  }
}

bool ImplDef::runs_on(const std::string& backend) const {
  return std::find(backends.begin(), backends.end(), backend) != backends.end();
}

std::string ImplDef::backends_text() const { return fmt::format("{}", fmt::join(backends, "|")); }

}  // namespace opmeter
