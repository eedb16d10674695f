// A config's `pipelines:` list: built-in pipelines by name (with parameters) and users' own,
// written as layers.
#include "config/pipeline_config.hpp"

#include <set>

#include <fmt/format.h>

#include "config/config.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

std::vector<std::string> builtin_names() {
  std::vector<std::string> names;
  for (const auto* d : pipeline::Registry::global().all()) names.push_back(d->name);
  return names;
}

// Scalar values of a map's keys other than `taken`, in the order written (a key given twice was
// refused with the whole config: YamlReader::reject_duplicate_keys).
std::vector<std::pair<std::string, std::string>> values_of(const YamlReader& r, const YAML::Node& map,
                                                           const std::set<std::string>& taken) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& kv : map) {
    auto key = r.text(kv.first, "a key");  // [a]: 1 is no name (as<std::string> would throw yaml-cpp's own error)
    if (!taken.count(key)) v.emplace_back(key, r.text(kv.second, key));
  }
  return v;
}

// A pipeline's name or a layer's label: it names files and rows of tables and logs, so it is one
// line of text, not empty.
std::string name_text(const YamlReader& r, const YAML::Node& n, const std::string& what) {
  auto name = r.text(n, what);
  if (name.empty()) r.fail(n, fmt::format("{} is empty: give it a name", what));
  if (auto hidden = hidden_character(name); !hidden.empty())
    r.fail(n, fmt::format("{} '{}' holds a control or invisible character ({}): names are one line of printable text",
                          what, shown_safely(name), hidden));
  return name;
}

pipeline::Pipeline builtin(const YamlReader& r, const YAML::Node& at, const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& given, DType dtype) {
  try {
    return pipeline::build(name, given, dtype);
  } catch (const CaseError& e) {
    r.fail(at, e.what());
  }
}

// {name, samples, unit, layers: [{label, op, count, <op params>...}]}
pipeline::Pipeline users(const YamlReader& r, const YAML::Node& entry, const std::string& name, DType dtype) {
  r.check_keys(entry, {"name", "samples", "unit", "layers"}, "pipeline '" + name + "'");
  if (pipeline::Registry::global().find(name))
    r.fail(entry["name"], fmt::format("pipeline '{}' is built in: give your own pipeline another name", name));
  const auto& layers = entry["layers"];
  if (!layers.IsSequence() || layers.size() == 0)
    r.fail(layers, fmt::format("pipeline '{}': 'layers' must be a non-empty list of {{label, op, count, <op parameters>}}", name));
  pipeline::Pipeline p;
  p.name = name;
  p.dtype = dtype;
  if (entry["samples"]) p.samples = r.number(entry["samples"], "samples", 1e-9, 1e12);
  if (entry["unit"]) p.sample_unit = name_text(r, entry["unit"], "unit");
  std::set<std::string> labels;
  for (const auto& l : layers) {
    r.expect_map(l, "a layer");
    if (!l["label"] || !l["op"]) r.fail(l, "a layer needs 'label' and 'op' (and the op's parameters)");
    auto label = name_text(r, l["label"], "label");
    if (!labels.insert(label).second) r.fail(l["label"], fmt::format("layer label '{}' appears twice in pipeline '{}'", label, name));
    std::size_t count = l["count"] ? std::size_t(r.integer(l["count"], "count", 1, 1 << 20)) : 1;
    try {
      p.layers.push_back(pipeline::make_layer(label, r.text(l["op"], "op"), values_of(r, l, {"label", "op", "count"}), dtype, count));
    } catch (const CaseError& e) {
      r.fail(l, e.what());
    }
  }
  return p;
}

}  // namespace

Case pipelines_where(Case like, int threads, bool hot, const std::set<std::string>& given) {
  like.threads = threads;
  like.hot = hot;
  // A pipeline's small kernels get the backend's pipeline defaults (CUDA: 100 launches to a graph).
  for (auto& setting : backend_of(like).settings())
    if (!setting.pipeline_default.empty() && !given.count(setting.name)) like.set_setting(setting.name, setting.pipeline_default);
  return like;
}

std::vector<pipeline::Pipeline> read_pipelines(const YamlReader& r, const YAML::Node& list, DType dtype) {
  std::vector<pipeline::Pipeline> out;
  std::set<std::string> users_names, builtins;
  // A built-in pipeline listed twice with the same parameters would be measured and reported twice.
  auto once = [&](const YAML::Node& entry) {
    const auto& p = out.back();
    std::string key = p.name;
    for (const auto& [k, v] : p.params) key += "," + k + "=" + v;
    if (!builtins.insert(key).second)
      r.fail(entry, fmt::format("pipeline '{}' is listed twice with the same parameters", p.name));
  };
  auto one = [&](const YAML::Node& entry) {
    if (entry.IsScalar()) {
      auto name = r.text(entry, "pipeline");
      if (!pipeline::Registry::global().find(name)) r.fail(entry, unknown_name("pipeline", name, builtin_names()));
      out.push_back(builtin(r, entry, name, {}, dtype));
      once(entry);
      return;
    }
    r.expect_map(entry, "a pipeline");
    if (!entry["name"]) r.fail(entry, "a pipeline needs a 'name': a built-in one (opmeter list) or your own with 'layers'");
    auto name = name_text(r, entry["name"], "pipeline name");
    if (entry["layers"]) {
      // Its name is all that tells its results apart.
      if (!users_names.insert(name).second)
        r.fail(entry["name"], fmt::format("pipeline name '{}' is used twice: give each pipeline its own name", name));
      out.push_back(users(r, entry, name, dtype));
      return;
    }
    if (!pipeline::Registry::global().find(name))
      r.fail(entry["name"], unknown_name("pipeline", name, builtin_names()) + " (your own pipeline needs 'layers')");
    out.push_back(builtin(r, entry, name, values_of(r, entry, {"name"}), dtype));
    once(entry);
  };
  if (list.IsSequence()) {
    if (list.size() == 0) r.fail(list, "'pipelines' is empty: name at least one (opmeter list shows the built-in ones)");
    for (const auto& entry : list) one(entry);
  } else {
    one(list);
  }
  return out;
}

}  // namespace opmeter
