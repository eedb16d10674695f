// Vega-Lite specs for the report. The data is picked and aggregated here, in C++, so the specs
// stay declarative and small, and each is testable without a browser.
#include "report/charts.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/fusion.hpp"
#include "opmeter/registry.hpp"
#include "engine/ceiling_rate.hpp"
#include "engine/runner.hpp"
#include "opmeter/sensor.hpp"
#include "report/vega_spec.hpp"

namespace opmeter {
namespace {

using nlohmann::json;
using vega::spec_with;
using vega::field;

json log_field(const std::string& name, const std::string& title) {
  json f = field(name, "quantitative", title);
  f["scale"] = {{"type", "log"}};
  return f;
}

bool measured(const Result& r) { return r.status == Status::ok && r.summary.median > 0; }

std::optional<long long> int_param(const Result& r, const char* key) {
  if (!r.kase.has(key)) return std::nullopt;
  try {
    return std::stoll(r.kase.get(key));
  } catch (...) {
    return std::nullopt;
  }
}

struct GemmPoint {
  long long m, n, k;
  const Result* r;
};

// The best impl per (dtype, M, N, K, threads): the heatmap and curves show what the machine can
// do; the impl is in the tooltip.
std::vector<GemmPoint> best_gemm_points(const std::vector<Result>& results) {
  std::map<std::tuple<std::string, long long, long long, long long, int>, GemmPoint> best;
  for (auto& r : results) {
    if (r.kase.op != "gemm" || !measured(r) || !(r.gflops > 0)) continue;
    auto m = int_param(r, "M"), n = int_param(r, "N"), k = int_param(r, "K");
    if (!m || !n || !k) continue;
    auto key = std::make_tuple(std::string(to_string(r.kase.dtype)), *m, *n, *k, r.kase.threads);
    auto it = best.find(key);
    if (it == best.end() || it->second.r->gflops < r.gflops) best[key] = {*m, *n, *k, &r};
  }
  std::vector<GemmPoint> out;
  for (auto& [key, p] : best) out.push_back(p);
  return out;
}

json gemm_row(const GemmPoint& p) {
  return {{"M", p.m},   {"N", p.n}, {"K", p.k}, {"dtype", to_string(p.r->kase.dtype)}, {"impl", p.r->kase.impl},
          {"threads", p.r->kase.threads}, {"tflops", p.r->gflops / 1000}, {"case", p.r->case_string}};
}

json gemm_tooltip() {
  return json::array({field("case", "nominal"), field("impl", "nominal"),
                      {{"field", "tflops"}, {"type", "quantitative"}, {"title", "TFLOP/s"}, {"format", ".3f"}}});
}

// Whether an op is better read in GFLOP/s or GB/s: by its typical (median) case.
bool compute_bound(const std::vector<const Result*>& rs) {
  std::vector<const Result*> sorted = rs;
  if (sorted.empty()) return false;
  auto key = [](const Result* r) { return r->gbps > 0 ? r->intensity : (r->gflops > 0 ? 1e30 : 0.0); };
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end(),
                   [&](auto* a, auto* b) { return key(a) < key(b); });
  return is_compute_bound(*sorted[sorted.size() / 2]);
}

std::string slug(const std::string& s) {
  std::string out;
  for (char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
  return out;
}

}  // namespace

std::optional<Chart> gemm_heatmap_chart(const std::vector<Result>& results) {
  auto points = best_gemm_points(results);
  std::set<std::pair<long long, long long>> cells;
  for (auto& p : points) cells.insert({p.m, p.n});
  if (cells.size() < 2) return std::nullopt;  // one cell is not a map
  json values = json::array();
  for (auto& p : points) values.push_back(gemm_row(p));
  json spec = spec_with(values);
  spec["facet"] = {{"row", field("K", "ordinal", "K")}, {"column", field("dtype", "nominal", "dtype")}};
  json rect = {{"mark", {{"type", "rect"}, {"tooltip", true}}},
               {"encoding",
                {{"x", field("N", "ordinal", "N")},
                 {"y", {{"field", "M"}, {"type", "ordinal"}, {"title", "M"}, {"sort", "descending"}}},
                 {"color", {{"field", "tflops"}, {"type", "quantitative"}, {"title", "TFLOP/s"},
                            {"scale", {{"scheme", "viridis"}}}}},
                 {"tooltip", gemm_tooltip()}}}};
  json text = {{"mark", {{"type", "text"}, {"fontSize", 10}}},
               {"encoding",
                {{"x", field("N", "ordinal")},
                 {"y", {{"field", "M"}, {"type", "ordinal"}, {"sort", "descending"}}},
                 {"text", {{"field", "tflops"}, {"type", "quantitative"}, {"format", ".1f"}}},
                 {"color", {{"value", "white"}}}}}};
  spec["spec"] = {{"width", {{"step", 44}}}, {"height", {{"step", 26}}}, {"layer", {rect, text}}};
  return Chart{"gemm-heatmap", "gemm-heatmap", "GEMM throughput over M x N",
               "TFLOP/s (TOP/s for int8) of the best implementation for each M x N, one panel per K (rows) and dtype "
               "(columns); hover a cell for its case and impl.",
               spec};
}

std::optional<Chart> dtype_curves_chart(const std::vector<Result>& results) {
  json values = json::array();
  std::set<long long> sizes;
  for (auto& p : best_gemm_points(results)) {
    if (p.m != p.n || p.n != p.k) continue;
    sizes.insert(p.m);
    values.push_back(gemm_row(p));
  }
  if (sizes.size() < 2) return std::nullopt;  // a curve needs two sizes
  json spec = spec_with(values);
  spec["width"] = 560;
  spec["height"] = 320;
  spec["mark"] = {{"type", "line"}, {"point", true}, {"tooltip", true}};
  spec["encoding"] = {{"x", log_field("M", "size (M = N = K)")},
                      {"y", field("tflops", "quantitative", "TFLOP/s")},
                      {"color", field("dtype", "nominal", "dtype")},
                      {"detail", field("threads", "ordinal")},
                      {"tooltip", gemm_tooltip()}};
  return Chart{"dtype-curves", "dtype-curves", "Square GEMM by dtype",
               "TFLOP/s of the best implementation at each square size, one line per dtype.", spec};
}

namespace {
// Where a result's ceilings hold: its machine (merged runs), device and, on a host, thread count.
// A run of threads: [1, 2] has two rooflines, not the best of each drawn over both.
std::string roof_of(const Result& r) {
  std::string where = r.kase.on_host() ? fmt::format("threads={}", r.kase.threads) : r.kase.device;
  if (auto m = r.details.find(kMachineDetail); m != r.details.end()) where = m->second + ", " + where;
  return where;
}
}  // namespace

std::optional<Chart> roofline_chart(const std::vector<Result>& results) {
  std::map<std::string, std::map<std::string, double>> peaks;  // where -> dtype -> best measured GFLOP/s
  std::map<std::string, double> bandwidths;                    // where -> best measured GB/s
  std::set<std::string> roofs;                                 // where the points were measured
  json points = json::array();
  double lo = INFINITY, hi = 0;
  for (auto& r : results) {
    if (!measured(r)) continue;
    std::string dtype(to_string(r.kase.dtype));
    const std::string where = roof_of(r);
    double& bandwidth = bandwidths[where];
    const CeilingKind ceiling = ceiling_of(r.kase.op);
    // The ceilings as the run bounds its results with (engine/ceiling_rate.hpp).
    if (ceiling == CeilingKind::compute && r.gflops > 0)
      peaks[where][dtype] = std::max(peaks[where][dtype], ceiling_gflops(r));
    if (ceiling == CeilingKind::memory && r.work.bytes() >= kMemoryCeilingMinBytes)
      bandwidth = std::max(bandwidth, ceiling_gbps(r));
    if (r.peak_gflops) peaks[where][dtype] = std::max(peaks[where][dtype], *r.peak_gflops);
    if (r.bandwidth_gbps) bandwidth = std::max(bandwidth, *r.bandwidth_gbps);
    if (ceiling != CeilingKind::none || !(r.gflops > 0) || !(r.intensity > 0)) continue;
    roofs.insert(where);
    lo = std::min(lo, r.intensity);
    hi = std::max(hi, r.intensity);
    json p = {{"intensity", r.intensity}, {"gflops", r.gflops}, {"op", r.kase.op},
              {"dtype", to_string(r.kase.dtype)}, {"impl", r.kase.impl}, {"case", r.case_string}};
    if (r.efficiency) p["roofline_pct"] = *r.efficiency * 100;
    points.push_back(p);
  }
  if (points.empty()) return std::nullopt;
  for (auto& where : roofs)
    for (auto& [dtype, peak] : peaks[where])
      if (bandwidths[where] > 0) {
        lo = std::min(lo, peak / bandwidths[where]);
        hi = std::max(hi, peak / bandwidths[where]);
      }
  lo /= 2;
  hi *= 2;

  json lines = json::array();
  auto add = [&](const std::string& name, double intensity, double gflops) {
    lines.push_back({{"ceiling", name}, {"intensity", intensity}, {"gflops", gflops}});
  };
  for (auto& where : roofs) {  // the roofs of the points' own machines and thread counts
    const double bandwidth = bandwidths[where];
    const std::string at = roofs.size() > 1 ? " (" + where + ")" : "";
    for (auto& [dtype, peak] : peaks[where]) {
      std::string name = fmt::format("{} peak {:.0f} GFLOP/s{}", dtype, peak, at);
      if (bandwidth > 0) {
        add(name, lo, std::min(peak, bandwidth * lo));
        if (peak / bandwidth > lo && peak / bandwidth < hi) add(name, peak / bandwidth, peak);
        add(name, hi, std::min(peak, bandwidth * hi));
      } else {
        add(name, lo, peak);
        add(name, hi, peak);
      }
    }
    if (bandwidth > 0 && peaks[where].empty()) {
      std::string name = fmt::format("memory {:.0f} GB/s{}", bandwidth, at);
      add(name, lo, bandwidth * lo);
      add(name, hi, bandwidth * hi);
    }
  }

  json spec = {{"$schema", kVegaLiteSchema}, {"width", 620}, {"height", 380}};
  json x = log_field("intensity", "arithmetic intensity (FLOP/byte)");
  json y = log_field("gflops", "GFLOP/s");
  json layers = json::array();
  if (!lines.empty())
    layers.push_back({{"data", {{"values", lines}}},
                      {"mark", {{"type", "line"}, {"color", "#666"}, {"strokeWidth", 1.5}}},
                      {"encoding", {{"x", x}, {"y", y}, {"strokeDash", field("ceiling", "nominal", "ceiling")},
                                    {"tooltip", json::array({field("ceiling", "nominal")})}}}});
  layers.push_back({{"data", {{"values", points}}},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 40}, {"opacity", 0.8}}},
                    {"encoding",
                     {{"x", x},
                      {"y", y},
                      {"color", field("op", "nominal", "op")},
                      {"shape", field("dtype", "nominal", "dtype")},
                      {"tooltip", json::array({field("case", "nominal"),
                                               {{"field", "gflops"}, {"type", "quantitative"}, {"title", "GFLOP/s"}, {"format", ".1f"}},
                                               {{"field", "intensity"}, {"type", "quantitative"}, {"format", ".3g"}},
                                               {{"field", "roofline_pct"}, {"type", "quantitative"}, {"title", "% of roofline"}, {"format", ".1f"}}})}}}});
  spec["layer"] = layers;
  spec["resolve"] = {{"scale", {{"color", "independent"}, {"shape", "independent"}}}};
  std::string ceilings =
      lines.empty() ? "No ceiling was measured in these results (run with peak and bandwidth cases, or --calibration)."
                    : "Lines are the measured ceilings: the compute peak of each dtype and the memory bandwidth";
  if (!lines.empty())
    ceilings += roofs.size() > 1 ? ", one roofline per thread count or device the cases ran on." : ".";
  return Chart{"roofline", "roofline", "Roofline",
               "Each case at its arithmetic intensity and achieved GFLOP/s; hover for the case. " + ceilings, spec};
}

std::vector<Chart> impl_comparison_charts(const std::vector<Result>& results) {
  std::map<std::string, std::vector<const Result*>> by_op;
  for (auto& r : results)
    if (measured(r) && ceiling_of(r.kase.op) != CeilingKind::compute) by_op[r.kase.op].push_back(&r);
  std::vector<Chart> charts;
  for (auto& [op, rs] : by_op) {
    std::set<std::string> impls, dtypes;
    std::set<double> sizes;
    bool compute = compute_bound(rs);
    json values = json::array();
    for (auto* r : rs) {
      double size = compute ? r->work.flops * 1e-9 : r->work.bytes() / double(1 << 20);
      double rate = compute ? r->gflops : r->gbps;
      if (!(size > 0) || !(rate > 0)) continue;
      impls.insert(r->kase.impl);
      dtypes.insert(std::string(to_string(r->kase.dtype)));
      sizes.insert(size);
      values.push_back({{"impl", r->kase.impl}, {"dtype", to_string(r->kase.dtype)}, {"size", size}, {"rate", rate},
                        {"time_s", r->summary.median}, {"case", r->case_string}});
    }
    if (impls.size() < 2) continue;
    std::string rate_title = compute ? "GFLOP/s" : "GB/s";
    std::string size_title = compute ? "GFLOP per call" : "MiB moved per call";
    json tooltip = json::array({field("case", "nominal"),
                                {{"field", "rate"}, {"type", "quantitative"}, {"title", rate_title}, {"format", ".2f"}},
                                {{"field", "time_s"}, {"type", "quantitative"}, {"title", "median (s)"}, {"format", ".3e"}}});
    json spec = spec_with(values);
    spec["height"] = 240;
    if (sizes.size() == 1) {
      spec["width"] = {{"step", 28}};
      spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
      spec["encoding"] = {{"x", field("impl", "nominal", "impl")}, {"y", field("rate", "quantitative", rate_title)},
                          {"color", field("impl", "nominal")}, {"column", field("dtype", "nominal", "dtype")},
                          {"tooltip", tooltip}};
    } else {
      spec["width"] = 420;
      spec["mark"] = {{"type", "line"}, {"point", true}, {"tooltip", true}};
      spec["encoding"] = {{"x", log_field("size", size_title)}, {"y", field("rate", "quantitative", rate_title)},
                          {"color", field("impl", "nominal", "impl")}, {"tooltip", tooltip}};
      if (dtypes.size() > 1) spec["encoding"]["strokeDash"] = field("dtype", "nominal", "dtype");
    }
    charts.push_back(Chart{"impl-" + slug(op), "impl-comparison", op + ": implementations",
                           fmt::format("{} of each implementation of {} against problem size.", rate_title, op), spec});
  }
  return charts;
}

std::vector<Chart> efficiency_charts(const std::vector<Result>& results, std::size_t top_n) {
  std::map<std::string, std::vector<std::pair<double, const Result*>>> by_unit;
  for (auto& r : results)
    if (auto w = per_watt(r)) by_unit[w->unit].push_back({w->value, &r});
  std::vector<Chart> charts;
  for (auto& [unit, rows] : by_unit) {
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (rows.size() > top_n) rows.resize(top_n);
    json values = json::array();
    for (auto& [value, r] : rows)  // a result with energy but no average power has none to show
      values.push_back({{"case", r->case_string},
                        {"per_watt", value},
                        {"power_w", r->avg_power_w ? json(*r->avg_power_w) : json(nullptr)},
                        {"op", r->kase.op}});
    json spec = spec_with(values);
    spec["width"] = 480;
    spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
    spec["encoding"] = {
        {"y", {{"field", "case"}, {"type", "nominal"}, {"sort", "-x"}, {"title", nullptr}}},
        {"x", field("per_watt", "quantitative", unit)},
        {"color", field("op", "nominal", "op")},
        {"tooltip", json::array({field("case", "nominal"), field("per_watt", "quantitative", unit),
                                 field("power_w", "quantitative", "average power (W)")})}};
    charts.push_back(Chart{"efficiency-" + slug(unit), "efficiency", "Efficiency: " + unit,
                           fmt::format("The {} most efficient cases by {} (work per second per watt of measured power).",
                                       rows.size(), unit),
                           spec});
  }
  return charts;
}

std::optional<Chart> fusion_chart(const std::vector<Result>& results) {
  FusionThresholds t;
  auto rows = fusion_rows(results, t);
  if (rows.empty()) return std::nullopt;
  json values = json::array();
  for (auto& f : rows)
    values.push_back({{"label", fmt::format("{} {} {} ({})", f.pattern, f.dtype, f.shape, f.fused_impl)},
                      {"speedup", f.speedup}, {"verdict", f.verdict}, {"unfused_s", f.unfused_s},
                      {"fused_s", f.fused_s}, {"traffic_saved_pct", f.traffic_reduction * 100}});
  json bars = {{"mark", {{"type", "bar"}, {"tooltip", true}}},
               {"encoding",
                {{"y", {{"field", "label"}, {"type", "nominal"}, {"sort", "-x"}, {"title", nullptr}, {"axis", {{"labelLimit", 520}}}}},
                 {"x", field("speedup", "quantitative", "speedup of the fused form (unfused time / fused time)")},
                 {"color", {{"field", "verdict"}, {"type", "nominal"},
                            {"scale", {{"domain", {"fuse", "no benefit", "avoid"}},
                                       {"range", {"#2a9d55", "#999999", "#d1495b"}}}}}},
                 {"tooltip", json::array({field("label", "nominal", "case"), field("speedup", "quantitative"),
                                          field("traffic_saved_pct", "quantitative", "traffic saved (%)")})}}}};
  json rules = {{"data", {{"values", json::array({{{"at", 1.0}}, {{"at", t.fuse}}, {{"at", t.avoid}}})}}},
                {"mark", {{"type", "rule"}, {"strokeDash", {4, 3}}, {"color", "#444"}}},
                {"encoding", {{"x", field("at", "quantitative")}}}};
  json spec = spec_with(values);
  spec["width"] = 480;
  spec["layer"] = {bars, rules};
  return Chart{"fusion", "fusion", "Fusion speedups",
               fmt::format("Fused over unfused time per case; dashed lines at 1, at the fuse threshold {:.2f} and at "
                           "the avoid threshold {:.2f}.",
                           t.fuse, t.avoid),
               spec};
}

std::optional<Chart> burst_sustained_chart(const std::vector<Result>& results) {
  json values = json::array();
  for (auto& r : results) {
    if (!measured(r) || !r.sustained || !(r.sustained->summary.median > 0)) continue;
    bool compute = is_compute_bound(r);
    double burst = compute ? r.gflops / 1000 : r.gbps, sustained = compute ? r.sustained->gflops / 1000 : r.sustained->gbps;
    const char* unit = compute ? "TFLOP/s" : "GB/s";
    for (auto [figure, value] : {std::pair{"burst", burst}, std::pair{"sustained", sustained}})
      values.push_back({{"case", r.case_string}, {"figure", figure}, {"value", value}, {"unit", unit},
                        {"ratio", sustained / burst}});
  }
  if (values.empty()) return std::nullopt;
  json spec = spec_with(values);
  spec["width"] = 420;
  spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
  spec["encoding"] = {
      {"y", {{"field", "case"}, {"type", "nominal"}, {"title", nullptr}, {"axis", {{"labelLimit", 520}}}}},
      {"yOffset", field("figure", "nominal")},
      {"x", field("value", "quantitative", "TFLOP/s (compute-bound) or GB/s")},
      {"color", {{"field", "figure"}, {"type", "nominal"},
                 {"scale", {{"domain", {"burst", "sustained"}}, {"range", {"#4c78a8", "#f58518"}}}}}},
      {"tooltip", json::array({field("case", "nominal"), field("figure", "nominal"), field("value", "quantitative"),
                               field("unit", "nominal"), field("ratio", "quantitative", "sustained / burst")})}};
  return Chart{"burst-sustained", "burst-sustained", "GPU: burst vs sustained",
               "Burst: sampled after the GPU idled (the table's median). Sustained: at steady power, after running "
               "until power settled, in the energy window.",
               spec};
}

std::optional<Chart> gpu_telemetry_chart(const std::vector<Result>& results) {
  json values = json::array();
  double offset = 0;  // cases are laid end to end on one time axis
  for (auto& r : results) {
    const json& t = r.telemetry;
    if (!t.is_object() || !t.contains("t_s") || t["t_s"].empty()) continue;
    for (std::size_t i = 0; i < t["t_s"].size(); ++i) {
      auto reasons = t["reasons"][i].get<unsigned long long>();
      std::string state = reasons & kSlowdownReasons ? "slowdown" : reasons & kClockEventSwPowerCap ? "power cap" : "free";
      values.push_back({{"t", offset + t["t_s"][i].get<double>()}, {"case", r.case_string},
                        {"sm_mhz", t["sm_mhz"][i]}, {"power_w", t["power_w"][i]}, {"temp_c", t["temp_c"][i]},
                        {"state", state}});
    }
    offset += t["t_s"].back().get<double>() + 0.2;
  }
  if (values.empty()) return std::nullopt;
  auto panel = [&](const char* y, const char* title) {
    return json{{"width", 640}, {"height", 140},
                {"mark", {{"type", "line"}, {"point", {{"size", 12}}}, {"tooltip", true}}},
                {"encoding",
                 {{"x", field("t", "quantitative", "seconds (cases end to end)")},
                  {"y", field(y, "quantitative", title)},
                  {"detail", field("case", "nominal")},
                  {"color", {{"field", "state"}, {"type", "nominal"}, {"title", "clock state"},
                             {"scale", {{"domain", {"free", "power cap", "slowdown"}},
                                        {"range", {"#4c78a8", "#f58518", "#d1495b"}}}}}},
                  {"tooltip", json::array({field("case", "nominal"), field("t", "quantitative"), field("sm_mhz", "quantitative"),
                                           field("power_w", "quantitative"), field("temp_c", "quantitative"),
                                           field("state", "nominal")})}}}};
  };
  json spec = spec_with(values);
  spec["vconcat"] = {panel("sm_mhz", "SM clock (MHz)"), panel("power_w", "power (W)")};
  return Chart{"gpu-telemetry", "gpu-telemetry", "GPU telemetry",
               "NVML's SM clock and power through each GPU case (cool-down, burst samples, heating, sustained window); "
               "orange: at the software power cap (kept), red: slowed down by heat or hardware (samples discarded).",
               spec};
}

namespace {
// The charts of ratios to a baseline: `with_ratios` false leaves them out.
std::vector<Chart> charts_of(const std::vector<Result>& results, bool with_ratios) {
  std::vector<Chart> out;
  auto add = [&](std::optional<Chart> c) {
    if (c) out.push_back(std::move(*c));
  };
  add(gemm_heatmap_chart(results));
  add(dtype_curves_chart(results));
  add(roofline_chart(results));
  for (auto& c : impl_comparison_charts(results)) out.push_back(std::move(c));
  for (auto& c : efficiency_charts(results)) out.push_back(std::move(c));
  if (with_ratios) {
    add(fusion_chart(results));
    add(quantization_chart(results));
  }
  add(burst_sustained_chart(results));
  add(gpu_telemetry_chart(results));
  return out;
}
}  // namespace

std::vector<Chart> report_charts(const std::vector<Result>& results) { return charts_of(results, true); }

std::vector<Chart> report_charts(const std::vector<std::vector<Result>>& runs,
                                 const std::vector<std::string>& sources) {
  if (runs.size() == 1) return charts_of(runs[0], true);
  std::vector<Result> all;
  for (auto& r : runs) all.insert(all.end(), r.begin(), r.end());
  std::vector<Chart> out = charts_of(all, false);
  for (auto* ratio_chart : {&fusion_chart, &quantization_chart})
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (auto c = (*ratio_chart)(runs[i])) {
        c->id += fmt::format("-{}", i + 1);
        c->title += fmt::format(" ({})", sources.at(i));
        out.push_back(std::move(*c));
      }
  return out;
}

}  // namespace opmeter
