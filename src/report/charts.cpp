// Vega-Lite specs for the report. The data is picked and aggregated here, in C++, so the specs
// stay declarative and small, and each is testable without a browser.
#include "report/charts.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/fusion.hpp"
#include "analysis/run_where.hpp"
#include "engine/ceiling_rate.hpp"
#include "engine/runner.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/sensor.hpp"
#include "report/run_names.hpp"
#include "report/vega_spec.hpp"

namespace opmeter {
namespace {

using nlohmann::json;
using vega::spec_with;
using vega::field;

json log_field(const std::string& name, const std::string& title) {
  json f = field(name, "quantitative", title);
  f["scale"] = {{"type", "log"}};
  f["axis"] = {{"labelOverlap", "greedy"}};  // a log axis labels 0.02 and 0.03 side by side
  return f;
}

// The GEMM heatmap's cells, and the most distinct M or N and the largest panel grid it draws
// before a scatter takes its place: browsers draw no canvas over 32767 px a side.
constexpr int kHeatmapCellWidth = 44, kHeatmapCellHeight = 26;
constexpr std::size_t kHeatmapMaxValues = 24;
constexpr double kHeatmapMaxPx = 4000;

bool measured(const Result& r) { return r.status == Status::ok && r.summary.median > 0; }

std::optional<long long> int_param(const Result& r, const char* key) {
  if (!r.kase.has(key)) return std::nullopt;
  try {
    return std::stoll(r.kase.get(key));
  } catch (...) {
    return std::nullopt;
  }
}

// The run each result came from in a report of several runs (runs[i] names results[i]'s run);
// "" for a report of one.
class RunOf {
 public:
  RunOf(const std::vector<Result>& results, const std::vector<std::string>& runs) : results_(results), runs_(runs) {}
  std::string operator()(const Result& r) const {
    return runs_.empty() ? std::string() : runs_.at(static_cast<std::size_t>(&r - results_.data()));
  }

 private:
  const std::vector<Result>& results_;
  const std::vector<std::string>& runs_;
};

// What tells apart results that a chart would otherwise draw as one series (one line, one bar,
// one cell): where the case ran (thread count or device), the backend's settings, hot or cold,
// the machine of a merged run, the quantization recipe or training mode, and the run it came
// from. Only what differs among the chart's results is named, so a chart of one run at one
// thread count keeps plain names.
class Variants {
 public:
  Variants(const std::vector<const Result*>& rs, const RunOf& run_of) : run_of_(run_of) {
    std::array<std::set<std::string>, kParts> seen;
    for (auto* r : rs) {
      auto p = parts(*r);
      for (std::size_t i = 0; i < kParts; ++i) seen[i].insert(p[i]);
    }
    for (std::size_t i = 0; i < kParts; ++i) shown_[i] = seen[i].size() > 1;
  }
  // "threads=2, hot, quant=int8wo, run b/run1", or "" where nothing needs telling apart.
  std::string of(const Result& r) const {
    auto p = parts(r);
    std::string out;
    for (std::size_t i = 0; i < kParts; ++i)
      if (shown_[i] && !p[i].empty()) out += (out.empty() ? "" : ", ") + p[i];
    return out;
  }
  // `head` followed by the variant in parentheses: "opmeter (threads=2)".
  std::string name(const std::string& head, const Result& r) const {
    auto v = of(r);
    return v.empty() ? head : head + " (" + v + ")";
  }

 private:
  static constexpr std::size_t kParts = 6;
  std::array<std::string, kParts> parts(const Result& r) const {
    const Case& c = r.kase;
    std::string settings, recipe;
    // fmt::format, not chains of +: GCC 12 warns falsely (-Wrestrict) of those inlined here.
    for (auto& [k, v] : c.settings) settings += fmt::format("{}{}={}", settings.empty() ? "" : ",", k, v);
    for (const char* key : {"quant", "mode"})
      if (c.has(key)) recipe += fmt::format("{}{}={}", recipe.empty() ? "" : ",", key, c.get(key));
    const std::string machine = machine_of(r), run = run_of_(r);
    return {c.on_host() ? fmt::format("threads={}", c.threads) : c.device,
            settings,
            c.hot ? "hot" : "cold",
            machine.empty() ? "" : fmt::format("on {}", machine),
            recipe,
            run.empty() ? "" : fmt::format("run {}", run)};
  }
  const RunOf& run_of_;
  std::array<bool, kParts> shown_{};
};

// A case as a bar's name: the case string, and its machine and run where there are several (one
// case measured twice is two bars, not one stacked from both).
std::string case_label(const Result& r, const RunOf& run_of) {
  std::string out = r.case_string;
  if (auto m = machine_of(r); !m.empty()) out += " on " + m;
  if (auto run = run_of(r); !run.empty()) out += " (run " + run + ")";
  return out;
}

struct GemmPoint {
  long long m, n, k;
  const Result* r;
  std::string panel;  // the dtype and what tells results apart (threads, hot, run): a panel or line of its own
};

// The best impl per (dtype, threads, hot, run, M, N, K): the heatmap and curves show what the
// machine can do; the impl is in the tooltip.
std::vector<GemmPoint> best_gemm_points(const std::vector<Result>& results, const RunOf& run_of) {
  std::vector<const Result*> gemms;
  for (auto& r : results)
    if (r.kase.op == "gemm" && measured(r) && r.gflops > 0 && int_param(r, "M") && int_param(r, "N") &&
        int_param(r, "K"))
      gemms.push_back(&r);
  const Variants variants(gemms, run_of);
  std::map<std::tuple<std::string, long long, long long, long long>, GemmPoint> best;
  for (auto* r : gemms) {
    const long long m = *int_param(*r, "M"), n = *int_param(*r, "N"), k = *int_param(*r, "K");
    std::string panel = variants.name(std::string(to_string(r->kase.dtype)), *r);
    auto key = std::make_tuple(panel, m, n, k);
    auto it = best.find(key);
    if (it == best.end() || it->second.r->gflops < r->gflops) best[key] = {m, n, k, r, panel};
  }
  std::vector<GemmPoint> out;
  for (auto& [key, p] : best) out.push_back(p);
  return out;
}

// TFLOP/s where the best point reaches 1, else GFLOP/s: a CPU's 0.05 TFLOP/s reads 50 GFLOP/s.
struct RateUnit {
  bool tera;
  const char* title() const { return tera ? "TFLOP/s" : "GFLOP/s"; }
  double of(const Result& r) const { return tera ? r.gflops / 1000 : r.gflops; }
};
RateUnit rate_unit(const std::vector<GemmPoint>& points) {
  double top = 0;
  for (auto& p : points) top = std::max(top, p.r->gflops);
  return {top >= 1000};
}

json gemm_row(const GemmPoint& p, const RateUnit& unit) {
  return {{"M", p.m},
          {"N", p.n},
          {"K", p.k},
          {"dtype", to_string(p.r->kase.dtype)},
          {"panel", p.panel},
          {"impl", p.r->kase.impl},
          {"threads", p.r->kase.threads},
          {"tflops", p.r->gflops / 1000},
          {"rate", unit.of(*p.r)},
          {"gflop", p.r->work.flops > 0 ? p.r->work.flops * 1e-9 : 2e-9 * double(p.m) * double(p.n) * double(p.k)},
          {"case", p.r->case_string}};
}

json gemm_tooltip(const RateUnit& unit) {
  return json::array({field("case", "nominal"),
                      field("impl", "nominal"),
                      {{"field", "rate"}, {"type", "quantitative"}, {"title", unit.title()}, {"format", ".4~r"}}});
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

std::optional<Chart> gemm_heatmap_chart(const std::vector<Result>& results, const std::vector<std::string>& runs) {
  const RunOf run_of(results, runs);
  auto points = best_gemm_points(results, run_of);
  std::set<std::pair<long long, long long>> cells;
  std::set<long long> ms, ns, ks;
  std::set<std::string> panels;
  for (auto& p : points) {
    cells.insert({p.m, p.n});
    ms.insert(p.m);
    ns.insert(p.n);
    ks.insert(p.k);
    panels.insert(p.panel);
  }
  if (cells.size() < 2) return std::nullopt;  // one cell is not a map
  const RateUnit unit = rate_unit(points);
  json values = json::array();
  for (auto& p : points) values.push_back(gemm_row(p, unit));
  json spec = spec_with(values);
  json color = field("panel", "nominal", "dtype");
  color["legend"] = {{"labelLimit", 480}};
  // A sweep of many distinct sizes (shapes: random) would be a grid of mostly empty cells, a
  // canvas taller than any browser draws (240 random shapes: 8673 x 952353 px): a scatter of
  // rate against work per call instead.
  const double width = double(panels.size()) * (double(ns.size()) * kHeatmapCellWidth + 40),
               height = double(ks.size()) * (double(ms.size()) * kHeatmapCellHeight + 40);
  if (ms.size() > kHeatmapMaxValues || ns.size() > kHeatmapMaxValues || width > kHeatmapMaxPx ||
      height > kHeatmapMaxPx) {
    spec["width"] = 620;
    spec["height"] = 380;
    spec["mark"] = {{"type", "point"}, {"filled", true}, {"size", 40}, {"opacity", 0.8}, {"tooltip", true}};
    json tooltip = gemm_tooltip(unit);
    for (const char* d : {"M", "N", "K"}) tooltip.push_back(field(d, "quantitative"));
    spec["encoding"] = {{"x", log_field("gflop", "GFLOP per call")},
                        {"y", log_field("rate", unit.title())},
                        {"color", color},
                        {"tooltip", tooltip}};
    return Chart{
        "gemm-heatmap", "gemm-scatter", "GEMM throughput over work per call",
        fmt::format("{} of the best implementation for each of {} shapes against its work per call; {} "
                    "distinct M, {} N and {} K are too many for a heatmap. Hover a point for its case and impl.",
                    unit.title(), points.size(), ms.size(), ns.size(), ks.size()),
        spec};
  }
  spec["facet"] = {
      {"row", field("K", "ordinal", "K")},
      {"column", {{"field", "panel"}, {"type", "nominal"}, {"title", nullptr}, {"header", {{"labelLimit", 480}}}}}};
  json rect = {
      {"mark", {{"type", "rect"}, {"tooltip", true}}},
      {"encoding",
       {{"x", field("N", "ordinal", "N")},
        {"y", {{"field", "M"}, {"type", "ordinal"}, {"title", "M"}, {"sort", "descending"}}},
        {"color",
         {{"field", "rate"}, {"type", "quantitative"}, {"title", unit.title()}, {"scale", {{"scheme", "viridis"}}}}},
        {"tooltip", gemm_tooltip(unit)}}}};
  json text = {{"mark", {{"type", "text"}, {"fontSize", 10}}},
               {"encoding",
                {{"x", field("N", "ordinal")},
                 {"y", {{"field", "M"}, {"type", "ordinal"}, {"sort", "descending"}}},
                 {"text", {{"field", "rate"}, {"type", "quantitative"}, {"format", ".3~r"}}},
                 {"color", {{"value", "white"}}}}}};
  spec["spec"] = {
      {"width", {{"step", kHeatmapCellWidth}}}, {"height", {{"step", kHeatmapCellHeight}}}, {"layer", {rect, text}}};
  return Chart{"gemm-heatmap", "gemm-heatmap", "GEMM throughput over M x N",
               fmt::format("{} (TOP/s for int8) of the best implementation for each M x N, one panel per K (rows) and "
                           "dtype (columns; also per thread count, hot or cold, and run where these differ); hover a "
                           "cell for its case and impl.",
                           unit.title()),
               spec};
}

std::optional<Chart> dtype_curves_chart(const std::vector<Result>& results, const std::vector<std::string>& runs) {
  const RunOf run_of(results, runs);
  std::vector<GemmPoint> square;
  std::set<long long> sizes;
  for (auto& p : best_gemm_points(results, run_of)) {
    if (p.m != p.n || p.n != p.k) continue;
    sizes.insert(p.m);
    square.push_back(p);
  }
  if (sizes.size() < 2) return std::nullopt;  // a curve needs two sizes
  const RateUnit unit = rate_unit(square);
  json values = json::array();
  for (auto& p : square) values.push_back(gemm_row(p, unit));
  json spec = spec_with(values);
  spec["width"] = 560;
  spec["height"] = 320;
  spec["mark"] = {{"type", "line"}, {"point", true}, {"tooltip", true}};
  json color = field("panel", "nominal", "dtype");
  color["legend"] = {{"labelLimit", 480}};
  spec["encoding"] = {{"x", log_field("M", "size (M = N = K)")},
                      {"y", field("rate", "quantitative", unit.title())},
                      {"color", color},
                      {"tooltip", gemm_tooltip(unit)}};
  return Chart{"dtype-curves", "dtype-curves", "Square GEMM by dtype",
               fmt::format("{} of the best implementation at each square size, one line per dtype (and per thread "
                           "count, hot or cold, and run where these differ).",
                           unit.title()),
               spec};
}

namespace {
// Where a result's ceilings hold: its run (a report of several), its machine (merged runs), device
// and, on a host, thread count. A run of threads: [1, 2], or two runs from two machines, have two
// rooflines, not the best of each drawn over both.
std::string roof_of(const Result& r, const RunOf& run_of) {
  std::string where = r.kase.on_host() ? fmt::format("threads={}", r.kase.threads) : r.kase.device;
  if (auto m = machine_of(r); !m.empty()) where = m + ", " + where;
  if (auto run = run_of(r); !run.empty()) where = "run " + run + ", " + where;
  return where;
}

// The dtype whose compute ceiling bounds a result: a peak case's own; any other case's as its op
// declares it (an int8dq recipe of a bf16 linear computes in int8 and carries the int8 peak).
// Nothing for an op this build does not know.
std::optional<std::string> ceiling_dtype(const Result& r) {
  if (ceiling_of(r.kase.op) == CeilingKind::compute) return std::string(to_string(r.kase.dtype));
  const OpDef* op = Registry::global().op(r.kase.op);
  if (!op || !op->peak_dtype) return std::nullopt;
  if (auto d = op->peak_dtype(r.kase)) return std::string(to_string(*d));
  return std::nullopt;
}
}  // namespace

std::optional<Chart> roofline_chart(const std::vector<Result>& results, const std::vector<std::string>& runs) {
  const RunOf run_of(results, runs);
  std::map<std::string, std::map<std::string, double>> peaks;  // where -> ceiling dtype -> best measured GFLOP/s
  std::map<std::string, double> bandwidths;                    // where -> best measured GB/s
  std::map<std::string, std::set<std::string>> bounding;       // where -> the ceiling dtypes of its points
  json points = json::array();
  double lo = INFINITY, hi = 0;
  for (auto& r : results) {
    if (!measured(r)) continue;
    const std::string where = roof_of(r, run_of);
    const auto bound = ceiling_dtype(r);
    double& bandwidth = bandwidths[where];
    const CeilingKind ceiling = ceiling_of(r.kase.op);
    // The ceilings as the run bounds its results with (engine/ceiling_rate.hpp), each under the
    // dtype it is the peak of, not the case's (an int8dq case is bf16 and carries the int8 peak).
    if (ceiling == CeilingKind::compute && r.gflops > 0)
      peaks[where][*bound] = std::max(peaks[where][*bound], ceiling_gflops(r));
    if (ceiling == CeilingKind::memory && r.work.bytes() >= kMemoryCeilingMinBytes)
      bandwidth = std::max(bandwidth, ceiling_gbps(r));
    if (r.peak_gflops && bound) peaks[where][*bound] = std::max(peaks[where][*bound], *r.peak_gflops);
    if (r.bandwidth_gbps) bandwidth = std::max(bandwidth, *r.bandwidth_gbps);
    if (ceiling != CeilingKind::none || !(r.gflops > 0) || !(r.intensity > 0)) continue;
    if (bound) bounding[where].insert(*bound);
    else bounding[where];
    lo = std::min(lo, r.intensity);
    hi = std::max(hi, r.intensity);
    json p = {{"intensity", r.intensity},
              {"gflops", r.gflops},
              {"op", r.kase.op},
              {"dtype", to_string(r.kase.dtype)},
              {"impl", r.kase.impl},
              {"case", r.case_string},
              {"roof", where},
              {"ceiling", bound ? *bound + " peak" : "-"}};
    if (r.efficiency) p["roofline_pct"] = *r.efficiency * 100;
    points.push_back(p);
  }
  if (points.empty()) return std::nullopt;
  // The compute ceilings a roof draws: those of its points' dtypes (all where none is known); an
  // int8 peak measured for other cases' sake is no roof of these.
  auto drawn = [&](const std::string& where) {
    std::map<std::string, double> out;
    for (auto& [dtype, peak] : peaks[where])
      if (bounding[where].empty() || bounding[where].count(dtype)) out[dtype] = peak;
    return out;
  };
  for (auto& [where, dtypes] : bounding)
    for (auto& [dtype, peak] : drawn(where))
      if (bandwidths[where] > 0) {
        lo = std::min(lo, peak / bandwidths[where]);
        hi = std::max(hi, peak / bandwidths[where]);
      }
  lo /= 2;
  hi *= 2;

  json lines = json::array();
  auto add = [&](const std::string& name, const std::string& where, const std::string& kind, double intensity,
                 double gflops) {
    lines.push_back({{"ceiling", name}, {"roof", where}, {"kind", kind}, {"intensity", intensity}, {"gflops", gflops}});
  };
  const bool several = bounding.size() > 1;
  for (auto& [where, dtypes] : bounding) {  // the roofs of the points' own runs, machines and thread counts
    const double bandwidth = bandwidths[where];
    const std::string at = several ? " (" + where + ")" : "";
    const auto roof_peaks = drawn(where);
    for (auto& [dtype, peak] : roof_peaks) {
      std::string name = fmt::format("{} peak {:.0f} GFLOP/s{}", dtype, peak, at), kind = dtype + " peak";
      if (bandwidth > 0) {
        add(name, where, kind, lo, std::min(peak, bandwidth * lo));
        if (peak / bandwidth > lo && peak / bandwidth < hi) add(name, where, kind, peak / bandwidth, peak);
        add(name, where, kind, hi, std::min(peak, bandwidth * hi));
      } else {
        add(name, where, kind, lo, peak);
        add(name, where, kind, hi, peak);
      }
    }
    if (bandwidth > 0 && roof_peaks.empty()) {
      std::string name = fmt::format("memory {:.0f} GB/s{}", bandwidth, at);
      add(name, where, "memory", lo, bandwidth * lo);
      add(name, where, "memory", hi, bandwidth * hi);
    }
  }

  json spec = {{"$schema", kVegaLiteSchema}, {"width", 620}, {"height", 380}};
  json x = log_field("intensity", "arithmetic intensity (FLOP/byte)");
  json y = log_field("gflops", "GFLOP/s");
  json layers = json::array();
  json legend = {{"labelLimit", 480}};
  // One roof: grey lines told apart by dash, points coloured by op. Several (thread counts, runs,
  // machines): each roof and its points in one colour, so that a point is read under its own roof.
  json roof_color = field("roof", "nominal", "roofline");
  roof_color["legend"] = legend;
  json dash = field(several ? "kind" : "ceiling", "nominal", "ceiling");
  dash["legend"] = legend;
  if (!lines.empty()) {
    json enc = {{"x", x}, {"y", y}, {"strokeDash", dash}, {"tooltip", json::array({field("ceiling", "nominal")})}};
    json mark = {{"type", "line"}, {"strokeWidth", 1.5}};
    if (several) {
      enc["color"] = roof_color;
      enc["detail"] = field("ceiling", "nominal");
    } else {
      mark["color"] = "#666";
    }
    layers.push_back({{"data", {{"values", lines}}}, {"mark", mark}, {"encoding", enc}});
  }
  json point_enc = {
      {"x", x},
      {"y", y},
      {"tooltip",
       json::array(
           {field("case", "nominal"),
            {{"field", "gflops"}, {"type", "quantitative"}, {"title", "GFLOP/s"}, {"format", ".1f"}},
            {{"field", "intensity"}, {"type", "quantitative"}, {"format", ".3g"}},
            field("ceiling", "nominal", "bounded by"),
            field("roof", "nominal", "roofline"),
            {{"field", "roofline_pct"}, {"type", "quantitative"}, {"title", "% of roofline"}, {"format", ".1f"}}})}};
  if (several) {
    point_enc["color"] = roof_color;
    point_enc["shape"] = field("op", "nominal", "op");
  } else {
    point_enc["color"] = field("op", "nominal", "op");
    point_enc["shape"] = field("dtype", "nominal", "dtype");
  }
  layers.push_back({{"data", {{"values", points}}},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 40}, {"opacity", 0.8}}},
                    {"encoding", point_enc}});
  spec["layer"] = layers;
  // One roof: the lines' dashes and the points' colours are separate legends; several: the
  // roofs' colours are shared by lines and points.
  if (!several) spec["resolve"] = {{"scale", {{"color", "independent"}, {"shape", "independent"}}}};
  std::string ceilings =
      lines.empty() ? "No ceiling was measured in these results (run with peak and bandwidth cases, or --calibration)."
                    : "Lines are the measured ceilings: the compute peak of each dtype (the dtype a case computes "
                      "in: an int8dq recipe under the int8 peak) and the memory bandwidth";
  if (!lines.empty())
    ceilings += several ? ", one roofline per run, machine, thread count or device the cases ran on, in its points' "
                          "colour."
                        : ".";
  return Chart{"roofline", "roofline", "Measured ceilings and cases",
               "Each case at its arithmetic intensity and achieved GFLOP/s; hover for the case. " + ceilings, spec};
}

std::vector<Chart> impl_comparison_charts(const std::vector<Result>& results, const std::vector<std::string>& runs) {
  const RunOf run_of(results, runs);
  std::map<std::string, std::vector<const Result*>> by_op;
  for (auto& r : results)
    if (measured(r) && ceiling_of(r.kase.op) != CeilingKind::compute) by_op[r.kase.op].push_back(&r);
  std::vector<Chart> charts;
  for (auto& [op, all] : by_op) {
    bool compute = compute_bound(all);
    auto size_of = [&](const Result& r) { return compute ? r.work.flops * 1e-9 : r.work.bytes() / double(1 << 20); };
    auto rate_of = [&](const Result& r) { return compute ? r.gflops : r.gbps; };
    std::vector<const Result*> rs;
    for (auto* r : all)
      if (size_of(*r) > 0 && rate_of(*r) > 0) rs.push_back(r);
    std::set<std::string> impls, dtypes;
    std::set<double> sizes;
    for (auto* r : rs) {
      impls.insert(r->kase.impl);
      dtypes.insert(std::string(to_string(r->kase.dtype)));
      sizes.insert(size_of(*r));
    }
    if (impls.size() < 2) continue;
    const Variants variants(rs, run_of);
    // Each result is a point or a bar of its own series: the impl and what tells its results
    // apart (threads, hot, recipe, run). A series with two results of one size would be a bar
    // drawn twice (or stacked: their sum), so those are told apart by their shapes, then counted.
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::size_t>> same;
    std::vector<std::string> variant;
    for (std::size_t i = 0; i < rs.size(); ++i) {
      variant.push_back(variants.of(*rs[i]));
      if (sizes.size() == 1)
        same[{rs[i]->kase.impl, variant[i], std::string(to_string(rs[i]->kase.dtype))}].push_back(i);
    }
    for (auto& [key, at] : same)
      for (std::size_t j = 0; at.size() > 1 && j < at.size(); ++j) {
        auto& v = variant[at[j]];
        v += (v.empty() ? "" : ", ") + rs[at[j]]->kase.params_string();
        if (std::count(variant.begin(), variant.end(), v) > 1) v += fmt::format(" #{}", j + 1);
      }
    json values = json::array();
    std::map<std::pair<std::string, std::string>, std::size_t> bars;  // (impl, dtype) -> bars in its band
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const Result& r = *rs[i];
      const std::string impl = r.kase.impl, series = variant[i].empty() ? impl : impl + " (" + variant[i] + ")";
      ++bars[{impl, std::string(to_string(r.kase.dtype))}];
      values.push_back({{"impl", impl},
                        {"dtype", to_string(r.kase.dtype)},
                        {"size", size_of(r)},
                        {"rate", rate_of(r)},
                        {"series", series},
                        {"variant", variant[i]},
                        {"time_s", r.summary.median},
                        {"case", r.case_string}});
    }
    std::string rate_title = compute ? "GFLOP/s" : "GB/s";
    std::string size_title = compute ? "GFLOP per call" : "MiB moved per call";
    json tooltip =
        json::array({field("case", "nominal"),
                     field("series", "nominal", "series"),
                     {{"field", "rate"}, {"type", "quantitative"}, {"title", rate_title}, {"format", ".2f"}},
                     {{"field", "time_s"}, {"type", "quantitative"}, {"title", "median (s)"}, {"format", ".3e"}}});
    json color = field("series", "nominal", "series");
    color["legend"] = {{"labelLimit", 480}};
    json spec = spec_with(values);
    spec["height"] = 240;
    // The rate of one result each: never summed (a bar chart stacks bars of one x by default).
    json y = field("rate", "quantitative", rate_title);
    y["stack"] = nullptr;
    if (sizes.size() == 1) {
      std::size_t most = 1;
      for (auto& [key, n] : bars) most = std::max(most, n);
      spec["width"] = {{"step", std::max<std::size_t>(28, 14 * most + 8)}};
      spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
      spec["encoding"] = {{"x", field("impl", "nominal", "impl")},
                          {"xOffset", field("variant", "nominal")},
                          {"y", y},
                          {"color", color},
                          {"column", field("dtype", "nominal", "dtype")},
                          {"tooltip", tooltip}};
    } else {
      spec["width"] = 420;
      spec["mark"] = {{"type", "line"}, {"point", true}, {"tooltip", true}};
      spec["encoding"] = {{"x", log_field("size", size_title)}, {"y", y}, {"color", color}, {"tooltip", tooltip}};
      if (dtypes.size() > 1) spec["encoding"]["strokeDash"] = field("dtype", "nominal", "dtype");
    }
    charts.push_back(
        Chart{"impl-" + slug(op), "impl-comparison", op + ": implementations",
              fmt::format("{} of each implementation of {} against problem size: {}, named by the impl and what "
                          "tells its results apart (threads, hot, recipe, run).",
                          rate_title, op, sizes.size() == 1 ? "one bar per result" : "one line per series"),
              spec});
  }
  return charts;
}

std::vector<Chart> efficiency_charts(const std::vector<Result>& results, std::size_t top_n,
                                     const std::vector<std::string>& runs) {
  const RunOf run_of(results, runs);
  std::map<std::string, std::vector<std::pair<double, const Result*>>> by_unit;
  for (auto& r : results)
    if (auto w = per_watt(r)) by_unit[w->unit].push_back({w->value, &r});
  std::vector<Chart> charts;
  for (auto& [unit, rows] : by_unit) {
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (rows.size() > top_n) rows.resize(top_n);
    json values = json::array();
    for (auto& [value, r] : rows)  // a result with energy but no average power has none to show
      values.push_back({{"case", case_label(*r, run_of)},
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
                {{"y",
                  {{"field", "label"},
                   {"type", "nominal"},
                   {"sort", "-x"},
                   {"title", nullptr},
                   {"axis", {{"labelLimit", 520}}}}},
                 {"x", field("speedup", "quantitative", "speedup of the fused form (unfused time / fused time)")},
                 {"color",
                  {{"field", "verdict"},
                   {"type", "nominal"},
                   {"scale",
                    {{"domain", {"fuse", "no benefit", "avoid", "uncertain", "nothing fused"}},
                     {"range", {"#2a9d55", "#999999", "#d1495b", "#e9c46a", "#cccccc"}}}}}},
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

std::optional<Chart> burst_sustained_chart(const std::vector<Result>& results, const std::vector<std::string>& runs) {
  const RunOf run_of(results, runs);
  json values = json::array();
  for (auto& r : results) {
    if (!measured(r) || !r.sustained || !(r.sustained->summary.median > 0)) continue;
    bool compute = is_compute_bound(r);
    double burst = compute ? r.gflops / 1000 : r.gbps, sustained = compute ? r.sustained->gflops / 1000 : r.sustained->gbps;
    const char* unit = compute ? "TFLOP/s" : "GB/s";
    for (auto [figure, value] : {std::pair{"burst", burst}, std::pair{"sustained", sustained}})
      values.push_back({{"case", case_label(r, run_of)},
                        {"figure", figure},
                        {"value", value},
                        {"unit", unit},
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
std::vector<Chart> charts_of(const std::vector<Result>& results, bool with_ratios,
                             const std::vector<std::string>& runs = {}) {
  std::vector<Chart> out;
  auto add = [&](std::optional<Chart> c) {
    if (c) out.push_back(std::move(*c));
  };
  add(gemm_heatmap_chart(results, runs));
  add(dtype_curves_chart(results, runs));
  add(roofline_chart(results, runs));
  for (auto& c : impl_comparison_charts(results, runs)) out.push_back(std::move(c));
  for (auto& c : efficiency_charts(results, 20, runs)) out.push_back(std::move(c));
  if (with_ratios) {
    add(fusion_chart(results));
    add(quantization_chart(results));
  }
  add(burst_sustained_chart(results, runs));
  add(gpu_telemetry_chart(results));
  return out;
}
}  // namespace

std::vector<Chart> report_charts(const std::vector<Result>& results) { return charts_of(results, true); }

std::vector<Chart> report_charts(const std::vector<std::vector<Result>>& runs,
                                 const std::vector<std::string>& sources) {
  if (runs.size() == 1) return charts_of(runs[0], true);
  std::vector<Result> all;
  std::vector<std::string> run_of;  // run_of[i]: the run all[i] came from
  const auto names = short_run_names(sources);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    all.insert(all.end(), runs[i].begin(), runs[i].end());
    run_of.insert(run_of.end(), runs[i].size(), names.at(i));
  }
  std::vector<Chart> out = charts_of(all, false, run_of);
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
