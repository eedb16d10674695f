// The quantization chart: each recipe's speedup over its baseline against the layer's rows M
// (decode is M = 1), one line per recipe and layer shape.
#include <fmt/format.h>

#include "analysis/quantization.hpp"
#include "report/charts.hpp"
#include "report/vega_spec.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

// A layer's parameters without its rows (batch, seq, M): the same weights at every M.
std::string without_rows(const std::string& shape) {
  std::string out;
  for (auto& kv : split(shape, ','))
    if (kv.rfind("batch=", 0) != 0 && kv.rfind("seq=", 0) != 0 && kv.rfind("M=", 0) != 0) out += (out.empty() ? "" : ",") + kv;
  return out;
}

}  // namespace

std::optional<Chart> quantization_chart(const std::vector<Result>& results) {
  using nlohmann::json;
  json values = json::array();
  for (auto& q : quant_rows(results)) {
    if (!q.speedup || !(q.m > 0)) continue;
    // The layer without its rows: the same weights at every M form one line (per recipe).
    values.push_back({{"recipe", q.recipe},
                      {"m", q.m},
                      {"speedup", *q.speedup},
                      // run: hot and cold, graphs, a merged run's machines are lines of their own
                      {"layer", fmt::format("{} {} {} {} {} {} {}", q.op, without_rows(q.shape), q.dtype, q.mode,
                                            q.device, q.impl, q.run)},
                      {"case", fmt::format("{} {}", q.op, q.shape)},
                      {"impl", q.impl},
                      {"baseline", q.baseline_impl},
                      {"sqnr_db", q.sqnr_db ? json(*q.sqnr_db) : json(nullptr)}});
  }
  if (values.empty()) return std::nullopt;
  json x = vega::field("m", "quantitative", "rows M (batch x seq)");
  x["scale"] = {{"type", "log"}};
  json lines = {{"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
                {"encoding",
                 {{"x", x},
                  {"y", vega::field("speedup", "quantitative", "speedup over the baseline (baseline time / recipe time)")},
                  {"color", vega::field("recipe", "nominal", "recipe")},
                  {"detail", vega::field("layer", "nominal")},
                  {"tooltip", json::array({vega::field("case", "nominal"), vega::field("recipe", "nominal"),
                                           vega::field("impl", "nominal"), vega::field("baseline", "nominal"),
                                           vega::number("speedup", "speedup", ".3f"), vega::number("sqnr_db", "SQNR (dB)", ".1f")})}}}};
  json rule = {{"data", {{"values", json::array({{{"at", 1.0}}})}}},
               {"mark", {{"type", "rule"}, {"strokeDash", {4, 3}}, {"color", "#444"}}},
               {"encoding", {{"y", vega::field("at", "quantitative")}}}};
  json spec = vega::spec_with(values);
  spec["width"] = 480;
  spec["height"] = 300;
  spec["layer"] = {lines, rule};
  return Chart{"quantization", "quantization", "Quantization recipes: speedup vs M",
               "Each recipe's speedup over the fastest unquantized impl of the same layer, against the rows M it "
               "multiplies (decode is M = 1); the dashed line is the baseline.",
               spec};
}

}  // namespace opmeter
