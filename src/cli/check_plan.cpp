// `opmeter check`'s cases (check_plan.hpp).
#include "cli/check_plan.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Each name given must be one of `known`; UsageError naming the first that is not.
void check_names(const std::vector<std::string>& given, const std::vector<std::string>& known, const char* what) {
  for (auto& name : given)
    if (!listed(known, name)) throw UsageError(fmt::format("unknown {} '{}' (known: {})", what, name, fmt::join(known, ", ")));
}

std::vector<DType> chosen_dtypes(const std::vector<std::string>& names) {
  std::vector<DType> out;
  for (auto& name : names) {
    auto d = parse_dtype(name);
    if (!d) {
      std::vector<std::string> known;
      for (auto k : all_dtypes()) known.emplace_back(to_string(k));
      throw UsageError(fmt::format("unknown dtype '{}' (known: {})", name, fmt::join(known, ", ")));
    }
    out.push_back(*d);
  }
  return out;
}

// Each impl named by --impl must run on the backend (for some op).
void check_impls_run_on(const std::vector<std::string>& impls, const Backend& backend, const std::string& device) {
  for (auto& name : impls) {
    std::vector<std::string> where;
    bool here = false;
    for (auto* op : Registry::global().ops())
      if (auto* impl = Registry::global().impl(op->name, name)) {
        here = here || impl->runs_on(backend.name());
        if (!listed(where, impl->backends_text())) where.push_back(impl->backends_text());
      }
    if (!here) throw UsageError(fmt::format("impl '{}' does not run on {} (it runs on {})", name, device, fmt::join(where, ", ")));
  }
}

// The case's parameters in the op's order (its parameters, then its optional ones), so that its
// string is canonical.
Params in_op_order(const OpDef& op, Params params) {
  auto rank = [&](const std::string& key) {
    auto p = std::find(op.params.begin(), op.params.end(), key);
    if (p != op.params.end()) return p - op.params.begin();
    auto o = std::find_if(op.optional_params.begin(), op.optional_params.end(), [&](auto& q) { return q.key == key; });
    return static_cast<std::ptrdiff_t>(op.params.size()) + (o - op.optional_params.begin());
  };
  std::stable_sort(params.begin(), params.end(), [&](auto& a, auto& b) { return rank(a.first) < rank(b.first); });
  return params;
}

}  // namespace

std::vector<Case> check_cases(const CheckSelection& s) {
  auto& reg = Registry::global();
  check_device(s.device);
  Backend& backend = backend_of(s.device);
  std::vector<std::string> op_names;
  for (auto* op : reg.ops()) op_names.push_back(op->name);
  check_names(s.ops, op_names, "op");
  check_names(s.impls, reg.impl_names(), "impl");
  check_impls_run_on(s.impls, backend, s.device);
  const std::vector<DType> dtypes = chosen_dtypes(s.dtypes);
  const auto filter = compile_filter(s.filter, s.exclude);

  Case like;  // where the cases run: the host with every usable CPU, or one device
  like.device = s.device;
  like.threads = like.on_host() ? default_threads() : 1;
  std::vector<Case> out;
  for (auto* op : reg.ops()) {
    if (!s.ops.empty() && !listed(s.ops, op->name)) continue;
    const auto shapes = check_shapes_of(*op);
    for (auto* impl : reg.impls_of(op->name)) {
      if (!impl->runs_on(backend.name())) continue;
      if (!s.impls.empty() && !listed(s.impls, impl->impl)) continue;
      // The worker's impls, unless named, get one case per op (a worker case costs a round trip
      // of files and may compile): its plumbing per op, not torch's arithmetic.
      const bool named = listed(s.impls, impl->impl) || listed(s.user_impls, impl->impl);
      const bool one_case = impl->on_request && !named;
      const bool every_shape = !s.quick && !one_case;
      bool any = false;  // a case of this impl so far
      for (DType d : impl->dtypes) {
        if (one_case && any) break;
        if (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end()) continue;
        std::size_t taken = 0;  // shapes this impl runs in this dtype
        for (auto& shape : shapes) {
          if (taken > 0 && !every_shape) break;
          bool took = false;
          for (auto& params : op->variants ? op->variants(shape, d, like) : std::vector<Params>{shape}) {
            Case c = like;
            c.op = op->name;
            c.impl = impl->impl;
            c.dtype = d;
            c.params = in_op_order(*op, params);
            if (!takes_optional_params(*impl, c).ok) continue;  // a recipe only its impls run
            took = true;
            if (filter && !filter->matches(c.to_string())) continue;
            out.push_back(c);
          }
          taken += took;
          any = any || took;
        }
      }
    }
  }
  if (out.empty())
    throw UsageError(fmt::format("no case to check on {}{}{}", s.device,
                                 s.filter.empty() ? "" : fmt::format(" matching --filter '{}'", s.filter),
                                 s.exclude.empty() ? "" : fmt::format(" less --exclude '{}'", s.exclude)));
  return out;
}

}  // namespace opmeter
