// The model report's Vega-Lite charts. The numbers are computed here, in C++, from the held-out
// predictions the model file keeps, so the specs stay declarative and testable without a browser.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "predict/report.hpp"
#include "predict/report_parts.hpp"
#include "report/vega_spec.hpp"

namespace opmeter::predict {
namespace {

using nlohmann::json;
using vega::spec_with;
using vega::field;
using vega::number;
using report_parts::kNominalCoverage;
using report_parts::model_label;

json filter(const std::string& key, const std::string& value) {
  return json::array({{{"filter", {{"field", key}, {"equal", value}}}}});
}

// The models in the order the report lists them, as a sort and color domain.
json model_order() {
  json order = json::array();
  for (auto k : kModelKinds) order.push_back(model_label(k));
  return order;
}

json model_color() {
  return {{"field", "model"}, {"type", "nominal"}, {"title", "model"}, {"sort", model_order()},
          {"scale", {{"domain", model_order()}, {"scheme", "tableau10"}}}};
}

// Percentile by linear interpolation between order statistics (values not empty).
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double at = q * static_cast<double>(v.size() - 1);
  auto i = static_cast<std::size_t>(at);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

// One held-out prediction that can be drawn on log axes.
struct Point {
  const GroupModel* group;
  const TrainingPoint* point;
  ModelKind model;
  double predicted_s;
  double ape() const { return std::abs(predicted_s - point->measured_s) / point->measured_s; }
};

std::vector<Point> drawable_points(const PredictModel& m) {
  std::vector<Point> out;
  for (auto& g : m.groups)
    for (auto& p : g.points) {
      if (!(p.measured_s > 0) || !std::isfinite(p.measured_s)) continue;
      for (auto k : kModelKinds) {
        auto it = p.predicted_s.find(k);
        if (it != p.predicted_s.end() && it->second > 0 && std::isfinite(it->second)) out.push_back({&g, &p, k, it->second});
      }
    }
  return out;
}

// Errors on log axes: an exact prediction would sit at minus infinity.
double log_safe_pct(double fraction) { return std::max(fraction * 100, 0.01); }

std::optional<Chart> scatter_chart(const std::vector<Point>& points) {
  if (points.empty()) return std::nullopt;
  double lo = INFINITY, hi = 0;
  std::set<ModelKind> models;
  json values = json::array();
  for (auto& p : points) {
    models.insert(p.model);
    lo = std::min({lo, p.point->measured_s, p.predicted_s});
    hi = std::max({hi, p.point->measured_s, p.predicted_s});
    values.push_back({{"row", "point"}, {"model", model_label(p.model)}, {"group", p.group->key},
                      {"case", p.point->case_string}, {"measured_ms", p.point->measured_s * 1e3},
                      {"predicted_ms", p.predicted_s * 1e3}, {"error_pct", p.ape() * 100}, {"fold", p.point->fold}});
  }
  // The guides as data rows of each model's panel: y = x and +-25%, across the whole range.
  const std::tuple<const char*, const char*, double> guides[] = {
      {"y = x", "y = x", 1.0}, {"+25%", "±25%", 1.25}, {"-25%", "±25%", 0.75}};
  for (auto k : models)
    for (auto& [guide, line, factor] : guides)
      for (double x : {lo, hi})
        values.push_back({{"row", "guide"}, {"model", model_label(k)}, {"guide", guide}, {"line", line},
                          {"measured_ms", x * 1e3}, {"predicted_ms", x * factor * 1e3}});

  json domain = {lo * 1e3, hi * 1e3};
  auto axis = [&](const std::string& name, const std::string& title) {
    return json{{"field", name}, {"type", "quantitative"}, {"title", title}, {"scale", {{"type", "log"}, {"domain", domain}}}};
  };
  json guide_layer = {
      {"transform", filter("row", "guide")},
      {"mark", {{"type", "line"}, {"clip", true}, {"color", "#777777"}, {"strokeWidth", 1}}},
      {"encoding",
       {{"x", axis("measured_ms", "measured (ms)")},
        {"y", axis("predicted_ms", "predicted, held out (ms)")},
        {"detail", field("guide", "nominal")},
        {"strokeDash", {{"field", "line"}, {"type", "nominal"}, {"title", "guide"},
                        {"scale", {{"domain", {"y = x", "±25%"}}, {"range", {{1, 0}, {4, 3}}}}}}}}}};
  json point_layer = {
      {"transform", filter("row", "point")},
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 30}, {"opacity", 0.75}, {"tooltip", true}}},
      {"encoding",
       {{"x", axis("measured_ms", "measured (ms)")},
        {"y", axis("predicted_ms", "predicted, held out (ms)")},
        {"color", {{"field", "group"}, {"type", "nominal"}, {"title", "group (device/op/impl/dtype)"},
                   {"legend", {{"labelLimit", 360}}}}},
        {"tooltip", json::array({field("case", "nominal"), field("group", "nominal"), number("measured_ms", "measured (ms)"),
                                 number("predicted_ms", "predicted (ms)"), number("error_pct", "error (%)", ".1f"),
                                 field("fold", "ordinal")})}}}};
  json spec = spec_with(values);
  spec["facet"] = {{"field", "model"}, {"type", "nominal"}, {"title", nullptr}, {"sort", model_order()}};
  spec["columns"] = 2;
  spec["spec"] = {{"width", 300}, {"height", 300}, {"layer", {guide_layer, point_layer}}};
  return Chart{"predict-scatter", "predict-scatter", "Predicted vs measured, held out",
               "Each case's time predicted by a model fitted without the case's fold against its measured time, one "
               "panel per model, log axes. On the solid line the prediction is exact; between the dashed lines it is "
               "within 25%.",
               spec};
}

std::optional<Chart> error_by_op_chart(const PredictModel& m) {
  json values = json::array();
  for (auto& g : m.groups)
    for (auto& [k, e] : g.cv) {
      if (e.n == 0) continue;
      values.push_back({{"group", g.key}, {"model", model_label(k)}, {"median_pct", log_safe_pct(e.median_ape)},
                        {"p90_pct", log_safe_pct(e.p90_ape)}, {"n", e.n}, {"best", k == g.best ? "best" : ""}});
    }
  if (values.empty()) return std::nullopt;
  json x = {{"field", "median_pct"}, {"type", "quantitative"}, {"title", "absolute error, held out (%)"},
            {"scale", {{"type", "log"}}}};
  json y = {{"field", "group"}, {"type", "nominal"}, {"title", nullptr}, {"axis", {{"labelLimit", 360}}}};
  json y_offset = {{"field", "model"}, {"type", "nominal"}, {"sort", model_order()}, {"scale", {{"domain", model_order()}}}};
  json tooltip = json::array({field("group", "nominal"), field("model", "nominal"), number("median_pct", "median error (%)", ".1f"),
                              number("p90_pct", "p90 error (%)", ".1f"), field("n", "quantitative", "cases"),
                              field("best", "nominal")});
  json whisker = {{"mark", {{"type", "rule"}, {"strokeWidth", 2}, {"opacity", 0.6}}},
                  {"encoding", {{"x", x}, {"x2", {{"field", "p90_pct"}}}, {"y", y}, {"yOffset", y_offset},
                                {"color", model_color()}, {"tooltip", tooltip}}}};
  json median = {{"mark", {{"type", "point"}, {"filled", true}, {"size", 50}}},
                 {"encoding", {{"x", x}, {"y", y}, {"yOffset", y_offset}, {"color", model_color()}, {"tooltip", tooltip}}}};
  json p90 = {{"mark", {{"type", "tick"}, {"thickness", 2}, {"size", 10}}},
              {"encoding", {{"x", {{"field", "p90_pct"}, {"type", "quantitative"}}}, {"y", y}, {"yOffset", y_offset},
                            {"color", model_color()}, {"tooltip", tooltip}}}};
  json spec = spec_with(values);
  spec["width"] = 560;
  spec["height"] = {{"step", 64}};
  spec["layer"] = {whisker, median, p90};
  return Chart{"predict-error-op", "predict-error-op", "Error by op",
               "Held-out absolute percentage error per group (device/op/impl/dtype) and model: the dot is the median, "
               "the line reaches the 90th percentile (the tick); log scale.",
               spec};
}

std::optional<Chart> error_by_size_chart(const std::vector<Point>& points) {
  // Size bins: log2 of the FLOPs, or of the bytes for ops that do no arithmetic worth counting.
  std::map<std::tuple<ModelKind, std::string, int>, std::vector<double>> bins;
  for (auto& p : points) {
    bool by_flops = p.point->flops > 0;
    double work = by_flops ? p.point->flops : p.point->bytes;
    if (!(work > 0)) continue;
    bins[{p.model, by_flops ? "FLOPs" : "bytes", static_cast<int>(std::floor(std::log2(work)))}].push_back(p.ape());
  }
  if (bins.empty()) return std::nullopt;
  json values = json::array();
  for (auto& [key, apes] : bins) {
    auto& [model, measure, log2] = key;
    for (auto [stat, q] : {std::pair{"median", 0.5}, {"p90", 0.9}})
      values.push_back({{"model", model_label(model)}, {"measure", measure}, {"log2", log2}, {"stat", stat},
                        {"pct", log_safe_pct(quantile(apes, q))}, {"n", apes.size()}});
  }
  json spec = spec_with(values);
  spec["facet"] = {{"column", {{"field", "measure"}, {"type", "nominal"}, {"title", "size: log2 of the work per call"},
                               {"sort", {"FLOPs", "bytes"}}}}};
  spec["spec"] = {
      {"width", 320},
      {"height", 240},
      {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
      {"encoding",
       {{"x", {{"field", "log2"}, {"type", "ordinal"}, {"title", "log2 (bin)"}}},
        {"y", {{"field", "pct"}, {"type", "quantitative"}, {"title", "absolute error, held out (%)"}, {"scale", {{"type", "log"}}}}},
        {"color", model_color()},
        {"strokeDash", {{"field", "stat"}, {"type", "nominal"}, {"title", "statistic"}, {"sort", {"median", "p90"}}}},
        {"tooltip", json::array({field("model", "nominal"), field("measure", "nominal"), field("log2", "ordinal", "log2 bin"),
                                 field("stat", "nominal"), number("pct", "error (%)", ".1f"), field("n", "quantitative", "cases")})}}}};
  spec["resolve"] = {{"scale", {{"x", "independent"}}}};
  return Chart{"predict-error-size", "predict-error-size", "Error by size",
               "Held-out absolute percentage error per size bin, all groups pooled: bins of log2 FLOPs per call, or "
               "of log2 bytes for ops without FLOPs; solid the median, dashed the 90th percentile; log scale.",
               spec};
}

std::optional<Chart> coverage_chart(const PredictModel& m) {
  json values = json::array();
  for (auto& g : m.groups)
    for (auto& [k, e] : g.cv) {
      if (e.n == 0) continue;
      values.push_back({{"group", g.key}, {"model", model_label(k)}, {"coverage_pct", e.coverage * 100}, {"n", e.n},
                        {"interval", fmt::format("{:+.0f}% / {:+.0f}%", (e.lo - 1) * 100, (e.hi - 1) * 100)}});
    }
  if (values.empty()) return std::nullopt;
  json bars = {
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"x", {{"field", "coverage_pct"}, {"type", "quantitative"}, {"title", "coverage, held out (%)"},
               {"scale", {{"domain", {0, 100}}}}}},
        {"y", {{"field", "group"}, {"type", "nominal"}, {"title", nullptr}, {"axis", {{"labelLimit", 360}}}}},
        {"yOffset", {{"field", "model"}, {"type", "nominal"}, {"sort", model_order()}, {"scale", {{"domain", model_order()}}}}},
        {"color", model_color()},
        {"tooltip", json::array({field("group", "nominal"), field("model", "nominal"), number("coverage_pct", "coverage (%)", ".1f"),
                                 field("interval", "nominal", "interval on the prediction"), field("n", "quantitative", "cases")})}}}};
  json nominal = {
      {"data", {{"values", json::array({{{"nominal_pct", kNominalCoverage * 100}, {"label", "nominal 90%"}}})}}},
      {"mark", {{"type", "rule"}, {"color", "#b00020"}, {"strokeDash", {5, 3}}, {"strokeWidth", 2}}},
      {"encoding", {{"x", {{"field", "nominal_pct"}, {"type", "quantitative"}}},
                    {"tooltip", json::array({field("label", "nominal", "nominal coverage")})}}}};
  json spec = spec_with(values);
  spec["width"] = 560;
  spec["height"] = {{"step", 64}};
  spec["layer"] = {bars, nominal};
  return Chart{"predict-coverage", "predict-coverage", "Interval coverage",
               "How often a held-out case fell inside its model's prediction interval (computed from the other folds "
               "only), per group and model; the dashed line is the nominal 90%. Well short of it, the interval is "
               "too narrow to trust.",
               spec};
}

}  // namespace

std::vector<Chart> model_charts(const PredictModel& m) {
  std::vector<Chart> out;
  auto points = drawable_points(m);
  for (auto& c : {scatter_chart(points), error_by_op_chart(m), error_by_size_chart(points), coverage_chart(m)})
    if (c) out.push_back(*c);
  return out;
}

}  // namespace opmeter::predict
