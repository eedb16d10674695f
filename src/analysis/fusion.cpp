#include "analysis/fusion.hpp"

#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/doubtful_flags.hpp"
#include "opmeter/registry.hpp"
#include "util/human_units.hpp"
#include "util/markdown_cell.hpp"

namespace opmeter {
namespace {
bool is_unfused(const std::string& impl) {
  const std::string suffix = "_unfused";
  return impl.size() > suffix.size() && impl.compare(impl.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::string fusion_verdict(double speedup, const FusionThresholds& t) {
  if (speedup >= t.fuse) return "fuse";
  if (speedup < t.avoid) return "avoid";
  return "no benefit";
}

std::string fusion_verdict(double low, double high, const FusionThresholds& t) {
  const std::string at_low = fusion_verdict(low, t);
  return at_low == fusion_verdict(high, t) ? at_low : "uncertain";
}

std::vector<FusionRow> fusion_rows(const std::vector<Result>& results, const FusionThresholds& t) {
  // Only the impl may differ: the case string without it keeps op, dtype, parameters and every
  // setting (threads or device, graph mode, cache mode), so a GPU case never pairs with a CPU one.
  auto key = [](const Result& r) {
    Case without_impl = r.kase;
    without_impl.impl.clear();
    return without_impl.to_string();
  };
  std::map<std::string, const Result*> baselines;
  for (auto& r : results)
    if (r.status == Status::ok && is_unfused(r.kase.impl) && r.summary.median > 0) baselines[key(r)] = &r;
  std::vector<FusionRow> rows;
  for (auto& r : results) {
    if (r.status != Status::ok || is_unfused(r.kase.impl) || r.kase.impl == "reference" || !(r.summary.median > 0))
      continue;
    auto it = baselines.find(key(r));
    const OpDef* op = Registry::global().op(r.kase.op);
    if (it == baselines.end() || !op || !op->fusion_pattern || !op->unfused_work) continue;
    const Result& base = *it->second;
    FusionRow row;
    row.pattern = op->fusion_pattern(r.kase);
    row.shape = r.kase.params_string();
    row.dtype = std::string(to_string(r.kase.dtype));
    row.threads = r.kase.threads;
    row.unfused_impl = base.kase.impl;
    row.fused_impl = r.kase.impl;
    row.unfused_s = base.summary.median;
    row.fused_s = r.summary.median;
    row.speedup = row.unfused_s / row.fused_s;
    row.unfused_bytes = op->unfused_work(r.kase).bytes();
    row.fused_bytes = op->work(r.kase).bytes();
    row.traffic_reduction = row.unfused_bytes > 0 ? 1 - row.fused_bytes / row.unfused_bytes : 0;
    row.unfused_gflops = base.gflops;
    row.fused_gflops = r.gflops;
    // unfused / fused, each median within its precision: a median known to ±50% cannot say avoid.
    const double pu = base.summary.precision, pf = r.summary.precision;
    const bool known = std::isfinite(pu) && std::isfinite(pf) && pu < 1 && pf < 1;
    const double inf = std::numeric_limits<double>::infinity();
    row.speedup_low = known ? row.speedup * (1 - pu) / (1 + pf) : 0;
    row.speedup_high = known ? row.speedup * (1 + pu) / (1 - pf) : inf;
    row.verdict = row.traffic_reduction == 0 ? "nothing fused" : fusion_verdict(row.speedup_low, row.speedup_high, t);
    add_doubtful_flags(r, "", row.flags);
    add_doubtful_flags(base, "unfused:", row.flags);
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json to_json(const FusionRow& row) {
  return {{"pattern", row.pattern},
          {"shape", row.shape},
          {"dtype", row.dtype},
          {"threads", row.threads},
          {"unfused_impl", row.unfused_impl},
          {"fused_impl", row.fused_impl},
          {"unfused_s", row.unfused_s},
          {"fused_s", row.fused_s},
          {"speedup", row.speedup},
          {"speedup_low", std::isfinite(row.speedup_high) ? nlohmann::json(row.speedup_low) : nlohmann::json()},
          {"speedup_high", std::isfinite(row.speedup_high) ? nlohmann::json(row.speedup_high) : nlohmann::json()},
          {"unfused_bytes", row.unfused_bytes},
          {"fused_bytes", row.fused_bytes},
          {"traffic_reduction", row.traffic_reduction},
          {"unfused_gflops", row.unfused_gflops},
          {"fused_gflops", row.fused_gflops},
          {"verdict", row.verdict},
          {"flags", row.flags}};
}

nlohmann::json fusion_json(const std::vector<FusionRow>& rows, const FusionThresholds& t) {
  nlohmann::json patterns = nlohmann::json::array();
  for (auto& r : rows) patterns.push_back(to_json(r));
  return {{"thresholds", {{"fuse_at_speedup", t.fuse}, {"avoid_below_speedup", t.avoid}}}, {"patterns", patterns}};
}

namespace {
// 369.1, or 0.0213 where one decimal would print 0.0.
std::string megabytes(double bytes) {
  const double mb = bytes / 1e6;
  return mb >= 1 || mb == 0 ? fmt::format("{:.1f}", mb) : fmt::format("{:.3g}", mb);
}
}  // namespace

std::string fusion_markdown(const std::vector<FusionRow>& rows, const FusionThresholds& t) {
  if (rows.empty()) return "";
  std::string out = fmt::format(
      "\n### Fusion (verdict: fuse at speedup >= {:.2f}, avoid below {:.2f}, over the speedup's whole interval: "
      "uncertain where it reaches past a threshold)\n\n"
      "Flags: the fused case's or its unfused baseline's (`unfused:contended`) that make the speedup, and so "
      "the verdict, doubtful: measure a flagged row again on a quiet machine before acting on it.\n\n"
      "| pattern | dtype | shape | fused impl | unfused | fused | speedup | interval (>= 95%) | MB unfused | MB fused "
      "| "
      "traffic saved | GFLOP/s unfused -> fused | verdict | flags |\n"
      "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
      t.fuse, t.avoid);
  for (auto& r : rows)
    out +=
        fmt::format("| {} | {} | {} | {} | {} | {} | {:.2f}x | {} | {} | {} | {:.0f}% | {:.1f} -> {:.1f} | {} | {} |\n",
                    markdown_cell(r.pattern), markdown_cell(r.dtype), markdown_cell(r.shape),
                    markdown_cell(r.fused_impl), human_time(r.unfused_s), human_time(r.fused_s), r.speedup,
                    std::isfinite(r.speedup_high) ? fmt::format("{:.2f}-{:.2f}", r.speedup_low, r.speedup_high)
                                                  : std::string("unknown (fewer than 6 samples)"),
                    megabytes(r.unfused_bytes), megabytes(r.fused_bytes), 100 * r.traffic_reduction, r.unfused_gflops,
                    r.fused_gflops, r.verdict, r.flags.empty() ? "-" : fmt::format("{}", fmt::join(r.flags, ", ")));
  return out;
}

}  // namespace opmeter
