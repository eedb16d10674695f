// Pipelines: layers, their cost, the registry of built-in pipelines and building one by name.
#include "opmeter/pipeline.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/did_you_mean.hpp"
#include "opmeter/errors.hpp"
#include "util/text.hpp"

namespace opmeter::pipeline {

double Pipeline::total_params() const {
  double sum = extra_params;
  for (const auto& l : layers) sum += l.cost.params * double(l.count);
  return sum;
}

double Pipeline::total_macs() const {
  double sum = 0;
  for (const auto& l : layers) sum += l.cost.macs * double(l.count);
  return sum;
}

Layer make_layer(std::string label, const std::string& op, std::vector<std::pair<std::string, std::string>> params,
                 DType dtype, std::size_t count, double extra_params) {
  const OpDef* def = opmeter::Registry::global().op(op);
  if (!def) {
    std::vector<std::string> known;
    for (const OpDef* d : opmeter::Registry::global().ops()) known.push_back(d->name);
    throw CaseError(fmt::format("layer '{}': {}", label, unknown_name("op", op, known)));
  }
  Case c;
  c.op = op;
  c.dtype = dtype;
  for (const auto& key : def->params) {
    auto given = std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.first == key; });
    if (given != params.end()) {
      c.params.emplace_back(key, given->second);
      continue;
    }
    auto dflt = std::find_if(def->defaults.begin(), def->defaults.end(), [&](const auto& p) { return p.first == key; });
    if (dflt == def->defaults.end())
      throw CaseError(fmt::format("layer '{}': {} needs parameter '{}'", label, op, key));
    c.params.emplace_back(key, dflt->second);
  }
  for (const auto& [key, value] : params) {
    if (std::find(def->params.begin(), def->params.end(), key) == def->params.end())
      throw CaseError(fmt::format("layer '{}': {}", label, unknown_name(op + " parameter", key, def->params)));
    try {
      check_canonical_integer(key, value);
    } catch (const CaseError& e) {
      throw CaseError(fmt::format("layer '{}': {}", label, e.what()));
    }
  }
  try {
    if (def->validate) def->validate(c);
  } catch (const CaseError& e) {
    throw CaseError(fmt::format("layer '{}': {}", label, e.what()));
  }
  if (count == 0) throw CaseError(fmt::format("layer '{}': count must be at least 1", label));
  Layer layer{std::move(label), std::move(c), count, {}};
  if (def->model_cost) layer.cost = def->model_cost(layer.kase);
  layer.cost.params += extra_params;
  return layer;
}

std::int64_t Args::integer(const std::string& key) const {
  auto it = std::find_if(values_.begin(), values_.end(), [&](const auto& p) { return p.first == key; });
  if (it == values_.end()) throw CaseError(fmt::format("pipeline parameter '{}' missing", key));
  std::int64_t v = 0;
  std::size_t used = 0;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || used == 0 || v < 1)
    throw CaseError(fmt::format("pipeline parameter {}='{}': expected a positive integer", key, it->second));
  return v;
}

Registry& Registry::global() {
  static Registry r;
  return r;
}

void Registry::add(PipelineDef def) {
  std::string name = def.name;
  defs_[name] = std::move(def);
}

const PipelineDef* Registry::find(const std::string& name) const {
  auto it = defs_.find(name);
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<const PipelineDef*> Registry::all() const {
  std::vector<const PipelineDef*> v;
  for (const auto& [name, def] : defs_) v.push_back(&def);
  return v;
}

Pipeline build(const std::string& name, const std::vector<std::pair<std::string, std::string>>& given, DType dtype) {
  const PipelineDef* def = Registry::global().find(name);
  if (!def) {
    std::vector<std::string> known;
    for (const PipelineDef* d : Registry::global().all()) known.push_back(d->name);
    throw CaseError(unknown_name("pipeline", name, known));
  }
  std::vector<std::pair<std::string, std::string>> values = def->defaults;
  std::vector<std::string> keys;
  for (const auto& [k, v] : def->defaults) keys.push_back(k);
  for (const auto& [key, value] : given) {
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& p) { return p.first == key; });
    if (it == values.end()) throw CaseError(fmt::format("{}: {}", name, unknown_name("parameter", key, keys)));
    check_canonical_integer(key, value);  // batch=01 and batch=1 are one pipeline
    it->second = value;
  }
  Pipeline p = def->build(Args(values), dtype);
  p.name = name;
  p.params = values;
  p.dtype = dtype;
  return p;
}

}  // namespace opmeter::pipeline
