// pipelines.json: pipeline summaries as JSON and back. Empty numbers are null, never 0.
#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "pipeline/present/pipeline_outputs.hpp"

namespace opmeter::pipeline {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json ranked_json(const std::vector<RankedLayer>& ranked, const std::vector<LayerSummary>& layers) {
  json out = json::array();
  for (auto& r : ranked)
    out.push_back({{"layer", r.layer}, {"label", r.layer < layers.size() ? layers[r.layer].label : ""},
                   {"value", r.value}, {"share", opt(r.share)}});
  return out;
}

json layer_json(const LayerSummary& l) {
  return {{"label", l.label},
          {"op", l.op},
          {"case", l.case_string},
          {"impl", l.impl},
          {"count", l.count},
          {"status", l.status},
          {"reason", l.reason},
          {"flags", l.flags},
          {"latency_s", opt(l.latency_s)},
          {"total_s", opt(l.total_s)},
          {"power_w", opt(l.power_w)},
          {"energy_j", opt(l.energy_j)},
          {"total_energy_j", opt(l.total_energy_j)},
          {"idle_energy_j", opt(l.idle_energy_j)},
          {"dynamic_energy_j", opt(l.dynamic_energy_j)},
          {"energy_reason", l.energy_reason},
          {"params", l.params},
          {"macs", l.macs},
          {"flops", opt(l.flops)},
          {"bytes", opt(l.bytes)},
          {"pct_roofline", opt(l.pct_roofline)},
          {"pct_peak", opt(l.pct_peak)}};
}

// Reading: every field named in the error, with what was expected.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) fail("", "an object");
  }
  template <class T>
  T get(const char* key) const {
    if (!j_.contains(key)) throw UsageError(fmt::format("{}: '{}' is missing", where_, key));
    try {
      return j_.at(key).get<T>();
    } catch (const json::exception&) {
      fail(key, expected<T>());
    }
  }
  std::optional<double> number(const char* key) const {
    if (!j_.contains(key) || j_.at(key).is_null()) return std::nullopt;
    if (!j_.at(key).is_number()) fail(key, "a number or null");
    return j_.at(key).get<double>();
  }
  std::string text(const char* key) const { return j_.contains(key) ? get<std::string>(key) : ""; }
  const json& at(const char* key) const {
    if (!j_.contains(key)) throw UsageError(fmt::format("{}: '{}' is missing", where_, key));
    return j_.at(key);
  }
  const std::string& where() const { return where_; }

 private:
  template <class T>
  static const char* expected() {
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    else if constexpr (std::is_same_v<T, bool>) return "true or false";
    else if constexpr (std::is_arithmetic_v<T>) return "a number";
    else return "a list of the right kind";
  }
  [[noreturn]] void fail(const std::string& key, const char* what) const {
    throw UsageError(fmt::format("{}{}: expected {}", where_, key.empty() ? "" : "." + key, what));
  }
  const json& j_;
  std::string where_;
};

LayerSummary layer_from_json(const json& j, const std::string& where) {
  Reader r(j, where);
  LayerSummary l;
  l.label = r.get<std::string>("label");
  l.op = r.get<std::string>("op");
  l.case_string = r.text("case");
  l.impl = r.text("impl");
  l.count = r.get<std::size_t>("count");
  l.status = r.get<std::string>("status");
  l.reason = r.text("reason");
  if (j.contains("flags")) l.flags = r.get<std::vector<std::string>>("flags");
  l.latency_s = r.number("latency_s");
  l.total_s = r.number("total_s");
  l.power_w = r.number("power_w");
  l.energy_j = r.number("energy_j");
  l.total_energy_j = r.number("total_energy_j");
  l.idle_energy_j = r.number("idle_energy_j");
  l.dynamic_energy_j = r.number("dynamic_energy_j");
  l.energy_reason = r.text("energy_reason");
  l.params = r.number("params").value_or(0);
  l.macs = r.number("macs").value_or(0);
  l.flops = r.number("flops");
  l.bytes = r.number("bytes");
  l.pct_roofline = r.number("pct_roofline");
  l.pct_peak = r.number("pct_peak");
  return l;
}

std::vector<RankedLayer> ranked_from_json(const Reader& r, const char* key, std::size_t layers) {
  std::vector<RankedLayer> out;
  const json& list = r.at(key);
  if (!list.is_array()) throw UsageError(fmt::format("{}.{}: expected a list", r.where(), key));
  for (std::size_t i = 0; i < list.size(); ++i) {
    Reader e(list[i], fmt::format("{}.{}[{}]", r.where(), key, i));
    RankedLayer x{e.get<std::size_t>("layer"), e.get<double>("value"), e.number("share")};
    if (x.layer >= layers)
      throw UsageError(fmt::format("{}.{}[{}].layer: {} is not one of the {} layers", r.where(), key, i, x.layer, layers));
    out.push_back(x);
  }
  return out;
}

}  // namespace

json to_json(const PipelineSummary& s) {
  json layers = json::array();
  for (auto& l : s.layers) layers.push_back(layer_json(l));
  json end_to_end = nullptr;
  if (!s.end_to_end_case.empty())
    end_to_end = {{"case", s.end_to_end_case},          {"status", s.end_to_end_status},
                  {"reason", s.end_to_end_reason},      {"scale", s.end_to_end_scale},
                  {"latency_s", opt(s.end_to_end_s)},   {"energy_j", opt(s.end_to_end_energy_j)},
                  {"ratio", opt(s.end_to_end_ratio)},   {"energy_ratio", opt(s.end_to_end_energy_ratio)},
                  {"precision", opt(s.end_to_end_precision)},
                  {"ratio_low", opt(s.end_to_end_ratio_low)}, {"ratio_high", opt(s.end_to_end_ratio_high)},
                  {"ratio_note", s.end_to_end_ratio_note}};
  json out = {{"name", s.name},
              {"params", s.params},
              {"dtype", s.dtype},
              {"device", s.device},
              {"samples", s.samples},
              {"sample_unit", s.sample_unit},
              {"total_params", s.total_params},
              {"total_macs", s.total_macs},
              {"complete", s.complete},
              {"missing", s.missing},
              {"latency_s", opt(s.latency_s)},
              {"throughput", opt(s.throughput)},
              {"energy_j", opt(s.energy_j)},
              {"dynamic_energy_j", opt(s.dynamic_energy_j)},
              {"energy_per_sample_j", opt(s.energy_per_sample_j)},
              {"dynamic_energy_per_sample_j", opt(s.dynamic_energy_per_sample_j)},
              {"energy_reason", s.energy_reason},
              {"idle_power_w", opt(s.idle_power_w)},
              {"period_s", opt(s.period_s)},
              {"pipeline_parallel_throughput", opt(s.pipeline_parallel_throughput)},
              {"pipeline_parallel_energy_j", opt(s.pipeline_parallel_energy_j)},
              {"top_by_time", ranked_json(s.top_by_time, s.layers)},
              {"top_by_energy", ranked_json(s.top_by_energy, s.layers)},
              {"end_to_end", end_to_end},
              {"layers", layers}};
  if (!s.machine.empty()) out["machine"] = s.machine;
  return out;
}

PipelineSummary summary_from_json(const json& j) {
  PipelineSummary s;
  Reader r(j, "pipeline");
  s.name = r.get<std::string>("name");
  Reader named(j, "pipeline " + s.name);
  s.params = named.get<std::vector<std::pair<std::string, std::string>>>("params");
  s.dtype = named.get<std::string>("dtype");
  s.device = named.get<std::string>("device");
  s.samples = named.get<double>("samples");
  s.sample_unit = named.get<std::string>("sample_unit");
  s.machine = named.text("machine");
  s.total_params = named.get<double>("total_params");
  s.total_macs = named.get<double>("total_macs");
  s.complete = named.get<bool>("complete");
  s.missing = named.get<std::vector<std::string>>("missing");
  s.latency_s = named.number("latency_s");
  s.throughput = named.number("throughput");
  s.energy_j = named.number("energy_j");
  s.dynamic_energy_j = named.number("dynamic_energy_j");
  s.energy_per_sample_j = named.number("energy_per_sample_j");
  s.dynamic_energy_per_sample_j = named.number("dynamic_energy_per_sample_j");
  s.energy_reason = named.text("energy_reason");
  s.idle_power_w = named.number("idle_power_w");
  s.period_s = named.number("period_s");
  s.pipeline_parallel_throughput = named.number("pipeline_parallel_throughput");
  s.pipeline_parallel_energy_j = named.number("pipeline_parallel_energy_j");
  const json& layers = named.at("layers");
  if (!layers.is_array()) throw UsageError(fmt::format("pipeline {}.layers: expected a list", s.name));
  for (std::size_t i = 0; i < layers.size(); ++i)
    s.layers.push_back(layer_from_json(layers[i], fmt::format("pipeline {} layer {}", s.name, i)));
  s.top_by_time = ranked_from_json(named, "top_by_time", s.layers.size());
  s.top_by_energy = ranked_from_json(named, "top_by_energy", s.layers.size());
  if (j.contains("end_to_end") && !j["end_to_end"].is_null()) {
    Reader e(j["end_to_end"], fmt::format("pipeline {}.end_to_end", s.name));
    s.end_to_end_case = e.get<std::string>("case");
    s.end_to_end_status = e.get<std::string>("status");
    s.end_to_end_reason = e.text("reason");
    s.end_to_end_scale = e.get<double>("scale");
    s.end_to_end_s = e.number("latency_s");
    s.end_to_end_energy_j = e.number("energy_j");
    s.end_to_end_ratio = e.number("ratio");
    s.end_to_end_energy_ratio = e.number("energy_ratio");
    s.end_to_end_precision = e.number("precision");
    s.end_to_end_ratio_low = e.number("ratio_low");
    s.end_to_end_ratio_high = e.number("ratio_high");
    s.end_to_end_ratio_note = e.text("ratio_note");
  }
  return s;
}

json pipelines_json(const std::vector<PipelineSummary>& summaries) {
  json list = json::array();
  for (auto& s : summaries) list.push_back(to_json(s));
  return {{"schema", kPipelinesSchema}, {"pipelines", list}};
}

}  // namespace opmeter::pipeline
