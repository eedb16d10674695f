// Pipeline charts: stacked per-layer bars, the pipelines compared, sum of layers vs end to end.
#include "report/pipeline_charts.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "pipeline/present/pipeline_outputs.hpp"
#include "report/pipeline_labels.hpp"
#include "report/vega_spec.hpp"

namespace opmeter {
namespace {

using nlohmann::json;
using vega::spec_with;
using vega::field;
using vega::number;
using pipeline::LayerSummary;
using pipeline::PipelineSummary;

std::string slug(const std::string& s) {
  std::string out;
  for (char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
  return out;
}

struct Segment {
  std::string name, op;
  double value = 0;
  std::size_t layers = 0;
};

// The largest `n` layers by `field` each a segment, the rest summed per op, largest first.
std::vector<Segment> segments(const PipelineSummary& s, std::optional<double> LayerSummary::*field, std::size_t n) {
  std::vector<const LayerSummary*> with;
  for (auto& l : s.layers)
    if (l.*field) with.push_back(&l);
  std::stable_sort(with.begin(), with.end(), [&](auto* a, auto* b) { return *(a->*field) > *(b->*field); });
  std::vector<Segment> out;
  std::map<std::string, Segment> rest;
  for (std::size_t i = 0; i < with.size(); ++i) {
    if (i < n) {
      out.push_back({with[i]->label, with[i]->op, *(with[i]->*field), 1});
      continue;
    }
    auto& g = rest[with[i]->op];
    g.op = with[i]->op;
    g.value += *(with[i]->*field);
    ++g.layers;
  }
  std::vector<Segment> grouped;
  for (auto& [op, g] : rest) {
    g.name = fmt::format("other {} ({} layer{})", op, g.layers, g.layers == 1 ? "" : "s");
    grouped.push_back(g);
  }
  std::stable_sort(grouped.begin(), grouped.end(), [](auto& a, auto& b) { return a.value > b.value; });
  out.insert(out.end(), grouped.begin(), grouped.end());
  return out;
}

// A chart's unit: sub-millisecond pipelines (a toy, or a layer per bar) read 0.0000-0.0040 on a
// ms axis, so a chart whose largest figure is under a milli-unit is drawn in micro-units.
struct Unit {
  double scale;
  std::string name;
};
Unit unit_for(double largest, const std::string& base) {
  return largest < 1e-3 ? Unit{1e6, "µ" + base} : Unit{1e3, "m" + base};
}
double total_of(const std::vector<Segment>& segs) {
  double total = 0;
  for (auto& g : segs) total += g.value;
  return total;
}
template <class Get>
double largest_of(const std::vector<PipelineSummary>& summaries, Get get) {
  double most = 0;
  for (auto& s : summaries)
    if (auto v = get(s)) most = std::max(most, *v);
  return most;
}

void add_bar(json& values, const std::string& bar, const std::vector<Segment>& segs, double scale) {
  double total = 0;
  for (auto& g : segs) total += g.value;
  for (std::size_t i = 0; i < segs.size(); ++i)
    values.push_back({{"bar", bar}, {"segment", segs[i].name}, {"op", segs[i].op}, {"value", segs[i].value * scale},
                      {"layers", segs[i].layers}, {"share", total > 0 ? segs[i].value / total * 100 : 0.0},
                      {"rank", i}});
}

json stacked_bar(const std::string& bar, const std::string& title) {
  return {{"transform", json::array({{{"filter", {{"field", "bar"}, {"equal", bar}}}}})},
          {"width", 640},
          {"height", 36},
          {"mark", {{"type", "bar"}, {"tooltip", true}}},
          {"encoding",
           {{"y", {{"field", "bar"}, {"type", "nominal"}, {"title", nullptr}}},
            {"x", {{"field", "value"}, {"type", "quantitative"}, {"title", title}, {"stack", "zero"}}},
            {"color", {{"field", "segment"}, {"type", "nominal"}, {"title", "layer or group"},
                       {"scale", {{"scheme", "category20"}}}, {"sort", {{"field", "rank"}}},
                       {"legend", {{"labelLimit", 320}, {"columns", 2}}}}},
            {"order", {{"field", "rank"}, {"type", "quantitative"}}},
            {"tooltip", json::array({field("segment", "nominal", "layer"), field("op", "nominal"), number("value", title),
                                     number("share", "% of the bar", ".1f"), field("layers", "quantitative")})}}}};
}

}  // namespace

std::optional<Chart> pipeline_layers_chart(const PipelineSummary& s, std::size_t index, std::size_t n,
                                           const std::string& label) {
  auto time = segments(s, &LayerSummary::total_s, n);
  if (time.empty()) return std::nullopt;
  auto energy = segments(s, &LayerSummary::total_energy_j, n);
  json values = json::array();
  const Unit t = unit_for(total_of(time), "s");
  add_bar(values, "latency", time, t.scale);
  json panels = json::array({stacked_bar("latency", t.name + " per pass (latency x count)")});
  if (!energy.empty()) {
    const Unit e = unit_for(total_of(energy), "J");
    add_bar(values, "energy", energy, e.scale);
    panels.push_back(stacked_bar("energy", e.name + " per pass (energy x count, idle included)"));
  }
  json spec = spec_with(values);
  spec["vconcat"] = panels;
  std::string incomplete =
      s.complete ? "" : fmt::format(" Incomplete: {} layer(s) were not measured and are not in the bars.", s.missing.size());
  return Chart{
      fmt::format("pipeline-{}-{}", index, slug(s.name)), "pipeline-layers",
      fmt::format("{}: time{} per layer", label.empty() ? pipeline::display_name(s) : label,
                  energy.empty() ? "" : " and energy"),
      fmt::format("Each segment is a layer's share of one forward pass (its latency or energy x its count); the "
                  "{} largest layers have their own segment, the rest are grouped by op.{}",
                  n, incomplete),
      spec};
}

std::optional<Chart> pipeline_comparison_chart(const std::vector<PipelineSummary>& summaries,
                                               std::vector<std::string> labels) {
  if (labels.size() != summaries.size()) labels = pipeline_labels(summaries);
  auto complete = [](auto figure) {
    return [figure](const PipelineSummary& s) { return s.complete ? s.*figure : std::nullopt; };
  };
  const Unit t = unit_for(largest_of(summaries, complete(&PipelineSummary::latency_s)), "s");
  const Unit e = unit_for(largest_of(summaries, complete(&PipelineSummary::energy_per_sample_j)), "J");
  const std::vector<std::string> metrics = {"latency per pass (" + t.name + ")", "energy per sample (" + e.name + ")",
                                            "throughput (samples/s)"};
  json values = json::array();
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    auto& s = summaries[i];
    if (!s.complete) continue;
    const std::string& name = labels[i];
    auto add = [&](const std::string& metric, const std::optional<double>& v, double scale, const std::string& unit) {
      if (v) values.push_back({{"pipeline", name}, {"metric", metric}, {"value", *v * scale}, {"unit", unit}});
    };
    add(metrics[0], s.latency_s, t.scale, t.name);
    add(metrics[1], s.energy_per_sample_j, e.scale, e.name + " per " + s.sample_unit);
    add(metrics[2], s.throughput, 1, s.sample_unit + "/s");
  }
  if (values.empty()) return std::nullopt;
  json spec = spec_with(values);
  spec["facet"] = {{"column", {{"field", "metric"}, {"type", "nominal"}, {"title", nullptr}, {"sort", metrics}}}};
  spec["spec"] = {
      {"width", 260},
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"y", {{"field", "pipeline"}, {"type", "nominal"}, {"title", nullptr}, {"axis", {{"labelLimit", 320}}}}},
        // Labels are distinct; were two the same, stacking would draw their sum as one bar.
        {"x", {{"field", "value"}, {"type", "quantitative"}, {"title", nullptr}, {"stack", nullptr}}},
        {"color", field("pipeline", "nominal")},
        {"tooltip", json::array({field("pipeline", "nominal"), field("metric", "nominal"), number("value", "value"),
                                 field("unit", "nominal")})}}}};
  spec["resolve"] = {{"scale", {{"x", "independent"}}}};
  return Chart{"pipeline-comparison", "pipeline-comparison", "Pipelines compared",
               "Complete pipelines only (an incomplete one has no totals): time of one forward pass as the sum of its "
               "layers, energy per sample (idle included) and throughput in the pipeline's own unit (img or token).",
               spec};
}

std::optional<Chart> pipeline_end_to_end_chart(const std::vector<PipelineSummary>& summaries,
                                               std::vector<std::string> labels) {
  if (labels.size() != summaries.size()) labels = pipeline_labels(summaries);
  json values = json::array();
  auto drawn = [](auto figure) {
    return [figure](const PipelineSummary& s) { return s.end_to_end_s ? s.*figure : std::nullopt; };
  };
  const Unit t = unit_for(std::max(largest_of(summaries, drawn(&PipelineSummary::latency_s)),
                                   largest_of(summaries, drawn(&PipelineSummary::end_to_end_s))),
                          "s");
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    auto& s = summaries[i];
    if (!s.end_to_end_s) continue;
    const std::string& name = labels[i];
    json ratio = s.end_to_end_ratio ? json(*s.end_to_end_ratio) : json(nullptr);
    if (s.latency_s)
      values.push_back(
          {{"pipeline", name}, {"figure", "sum of layers"}, {"time", *s.latency_s * t.scale}, {"ratio", ratio}});
    values.push_back(
        {{"pipeline", name}, {"figure", "PyTorch end to end"}, {"time", *s.end_to_end_s * t.scale}, {"ratio", ratio}});
  }
  if (values.empty()) return std::nullopt;
  json spec = spec_with(values);
  spec["width"] = 520;
  spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
  spec["encoding"] = {
      {"y", {{"field", "pipeline"}, {"type", "nominal"}, {"title", nullptr}, {"axis", {{"labelLimit", 320}}}}},
      {"yOffset", field("figure", "nominal")},
      {"x", {{"field", "time"}, {"type", "quantitative"}, {"title", t.name + " per forward pass"}, {"stack", nullptr}}},
      {"color",
       {{"field", "figure"},
        {"type", "nominal"},
        {"scale", {{"domain", {"sum of layers", "PyTorch end to end"}}, {"range", {"#4c78a8", "#f58518"}}}}}},
      {"tooltip", json::array({field("pipeline", "nominal"), field("figure", "nominal"), number("time", t.name),
                               number("ratio", "sum of layers / end to end", ".3f")})}};
  return Chart{"pipeline-end-to-end", "pipeline-end-to-end", "Sum of layers vs PyTorch end to end",
               "Each layer measured on its own and added up, beside the same model run end to end by PyTorch (scaled "
               "where it runs a part: OPT runs one decoder layer, x 64). Above 1, the layers in isolation add up to "
               "more than the model: launch gaps, cold caches between layers, and fusions PyTorch does are the usual causes.",
               spec};
}

}  // namespace opmeter
