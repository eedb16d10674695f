// `opmeter list` and `opmeter info`.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/pipeline.hpp"
#include "opmeter/registry.hpp"
#include "config/suites.hpp"

namespace opmeter {

namespace {

// Built-in pipelines, each with the parameters it is built from and their defaults.
void list_pipelines() {
  fmt::print("pipelines (built-in models, layer by layer):\n");
  for (const auto* def : pipeline::Registry::global().all()) {
    std::vector<std::string> params;
    for (const auto& [key, value] : def->defaults) params.push_back(key + "=" + value);
    fmt::print("  {:<18} {}\n", def->name, def->summary);
    fmt::print("                     params: {}\n", fmt::join(params, ", "));
  }
}

// The distinct parameter sets of an op's layers in the built-in pipelines, in registry order.
std::vector<std::vector<std::pair<std::string, std::string>>> pipeline_shapes(const std::string& op) {
  std::vector<std::vector<std::pair<std::string, std::string>>> out;
  for (const auto* def : pipeline::Registry::global().all()) {
    pipeline::Pipeline p;
    try {
      p = pipeline::build(def->name, {}, DType::fp32);
    } catch (const std::exception&) {
      continue;
    }
    for (const auto& l : p.layers)
      if (l.kase.op == op && std::find(out.begin(), out.end(), l.kase.params) == out.end()) out.push_back(l.kase.params);
  }
  return out;
}

bool runs_some_dtype(const ImplDef& impl, Case probe) {
  for (auto d : impl.dtypes) {
    probe.dtype = d;
    if (impl.supports(probe).ok) return true;
  }
  return false;
}

}  // namespace

int list_command() {
  auto& reg = Registry::global();
  fmt::print("ops and impls (availability on this machine):\n");
  for (auto* op : reg.ops()) {
    fmt::print("  {:<10} {}\n", op->name, op->summary);
    fmt::print("             params: {}\n", fmt::join(op->params, ", "));
    for (auto& o : op->optional_params)  // e.g. quant: values, config key, and what runs them
      fmt::print("             optional {} ({}; config key `{}`; default {}){}\n", o.key, o.help, o.config_key,
                 o.absent, o.values.empty() ? "" : fmt::format(": {}", fmt::join(o.values, ", ")));
    for (auto* impl : reg.impls_of(op->name)) {
      std::vector<std::string> dts;
      if (impl->on_request) {  // a worker's or a plugin's: availability shows when a case runs
        for (auto d : impl->dtypes) dts.emplace_back(to_string(d));
        fmt::print("    {:<17} [{}] {} ({}; runs when named)\n", impl->impl, impl->backends_text(), impl->summary,
                   fmt::join(dts, ", "));
        continue;
      }
      Backend* backend = backend_named(impl->backends.front());
      Case probe;  // the op's example case on the backend's first device, in each dtype
      probe.op = op->name;
      probe.impl = impl->impl;
      probe.params = op->example;
      for (auto& key : impl->needs)  // an impl of recipes is probed with one (the first that is not the default)
        for (auto& o : op->optional_params)
          if (o.key == key)
            for (auto& v : o.values)
              if (v != o.absent && !probe.has(key)) probe.set(key, v);
      if (backend) probe.device = backend->first_device();
      // An impl of a special case (depthwise convolution) takes none of the example: probed with
      // the first shape of the built-in pipelines it runs in some dtype, said beside its dtypes.
      std::string probed_with;
      if (backend && backend->ready().ok && backend->supports(probe).ok && !runs_some_dtype(*impl, probe))
        for (auto& params : pipeline_shapes(op->name)) {
          Case other = probe;
          for (auto& [key, value] : params) other.set(key, value);
          if (!backend->supports(other).ok || !runs_some_dtype(*impl, other)) continue;
          probe = other;
          probed_with = fmt::format(" (probed with {}; the example {} is not one it runs)", other.params_string(),
                                    Case{.params = op->example}.params_string());
          break;
        }
      // Without the backend or its device every dtype would repeat the same reason: say it once.
      Support here = !backend ? Support::no("this opmeter has no backend " + impl->backends.front())
                     : !backend->ready().ok ? backend->ready()
                                            : backend->supports(probe);
      if (!here.ok) {
        for (auto d : impl->dtypes) dts.emplace_back(to_string(d));
        fmt::print("    {:<17} [{}] {}\n                      dtypes: {} (unavailable here: {})\n", impl->impl, impl->backends_text(),
                   impl->summary, fmt::join(dts, ", "), here.reason);
        continue;
      }
      for (auto d : impl->dtypes) {
        probe.dtype = d;
        auto s = impl->supports(probe);
        dts.push_back(fmt::format("{}{}", to_string(d), s.ok ? "" : " (unavailable: " + s.reason + ")"));
      }
      fmt::print("    {:<17} [{}] {}\n                      dtypes: {}{}\n", impl->impl, impl->backends_text(), impl->summary,
                 fmt::join(dts, ", "), probed_with);
    }
  }
  for (auto* b : backends())  // a backend that cannot load lists no impls above: say why
    if (auto s = b->ready(); !s.ok) fmt::print("backend {} ({}): unavailable here: {}\n", b->name(), b->device_grammar(), s.reason);
  std::vector<std::string> dtypes;
  for (auto d : all_dtypes()) dtypes.emplace_back(to_string(d));
  fmt::print("dtypes: {}\n", fmt::join(dtypes, ", "));
  std::vector<std::string> suites;
  for (auto& [name, text] : builtin_suites()) suites.push_back(name);
  fmt::print("suites: {}\n", fmt::join(suites, ", "));
  list_pipelines();
  return 0;
}

int info_command() {
  fmt::print("{}\n", machine_context().dump(2));
  return 0;
}

}  // namespace opmeter
