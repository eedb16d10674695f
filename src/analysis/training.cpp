#include "analysis/training.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/doubtful_flags.hpp"
#include "analysis/run_where.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/linear.hpp"
#include "util/human_units.hpp"
#include "util/markdown_cell.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {
using linear::kMode, linear::kPhase, linear::kQuant, linear::training;
// A knob: an optional parameter of the op other than mode, phase and quant (linear's float8
// training knobs, as the op declares them).
bool is_knob(const Case& c, const std::string& key) {
  if (key == kMode || key == kPhase || key == kQuant) return false;
  const OpDef* op = Registry::global().op(c.op);
  if (!op) return false;
  for (auto& p : op->optional_params)
    if (p.key == key) return true;
  return false;
}

// The case without its phase: what the phases of one step share.
std::string step_key(const Case& c) {
  Case k = c;
  std::erase_if(k.params, [](auto& kv) { return kv.first == kPhase; });
  return k.to_string();
}

// The parameters without mode, phase, recipe and knobs: what a step and its baseline share.
std::string shape_of(const Case& c) {
  Case k = c;
  std::erase_if(k.params, [&c](auto& kv) {
    return kv.first == kMode || kv.first == kPhase || kv.first == kQuant || is_knob(c, kv.first);
  });
  return k.params_string();
}

// The case without impl, mode, phase, recipe and knobs: device, threads, settings and cache stay.
std::string baseline_key(const Case& c) {
  Case k = c;
  k.impl.clear();
  std::erase_if(k.params, [&c](auto& kv) {
    return kv.first == kMode || kv.first == kPhase || kv.first == kQuant || is_knob(c, kv.first);
  });
  return k.to_string();
}

std::string knobs_of(const Case& c) {
  std::vector<std::string> set;
  for (auto& [k, v] : c.params)
    if (is_knob(c, k)) set.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(set, ","));
}

std::string time_cell(const std::optional<double>& s, const std::optional<double>& pct) {
  if (!s) return "-";
  if (!pct) return human_time(*s);
  // Two figures below 10%: a slow phase reads 0.42%, not 0%.
  return *pct >= 10 ? fmt::format("{} ({:.0f}%)", human_time(*s), *pct)
                    : fmt::format("{} ({:.2g}%)", human_time(*s), *pct);
}
}  // namespace

std::optional<double> TrainingRow::phases_over_total() const {
  if (!fwd_s || !bwd_s || !total_s || !(*total_s > 0)) return std::nullopt;
  return (*fwd_s + *bwd_s) / *total_s;
}

std::vector<TrainingRow> training_rows(const std::vector<Result>& results) {
  std::vector<TrainingRow> rows;
  std::vector<std::string> row_keys;         // each row's baseline_key
  std::map<std::string, std::size_t> index;  // step_key -> row
  std::map<std::string, const Result*> baselines;
  for (auto& r : results) {
    if (r.status != Status::ok || !training(r.kase) || !(r.summary.median > 0)) continue;
    const Case& c = r.kase;
    // A merged run's machines are rows of their own, each against its own baseline.
    const std::string machine = machine_of(r);
    auto [it, fresh] = index.emplace(machine + "|" + step_key(c), rows.size());
    if (fresh) {
      TrainingRow row;
      row.device = c.device;
      row.op = c.op;
      row.shape = shape_of(c);
      row.dtype = std::string(to_string(c.dtype));
      row.threads = c.threads;
      row.run = run_part(r);
      row.where = where_cell(r);
      row.recipe = c.get_or(kQuant, "baseline");
      row.knobs = knobs_of(c);
      row.impl = c.impl;
      rows.push_back(std::move(row));
      row_keys.push_back(machine + "|" + baseline_key(c));
    }
    TrainingRow& row = rows[it->second];
    const std::string phase = c.get_or(kPhase, "step");
    add_doubtful_flags(r, phase == "forward" ? "fwd:" : phase == "backward" ? "bwd:" : "total:", row.flags);
    if (phase == "forward") {
      row.fwd_s = r.summary.median;
      row.fwd_pct_peak = r.pct_peak;
    } else if (phase == "backward") {
      row.bwd_s = r.summary.median;
      row.bwd_pct_peak = r.pct_peak;
    } else {
      row.total_s = r.summary.median;
      row.total_pct_peak = r.pct_peak;
      if (!c.has(kQuant) && knobs_of(c).empty() && c.impl != "reference") {
        auto& best = baselines[machine + "|" + baseline_key(c)];
        if (!best || r.summary.median < best->summary.median) best = &r;
      }
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    TrainingRow& row = rows[i];
    auto b = baselines.find(row_keys[i]);
    if (b == baselines.end() || !row.total_s) continue;
    row.baseline_impl = b->second->kase.impl;
    row.baseline_total_s = b->second->summary.median;
    row.speedup = *row.baseline_total_s / *row.total_s;
  }
  return rows;
}

std::string training_markdown(const std::vector<TrainingRow>& rows) {
  if (rows.empty()) return "";
  std::string out =
      "\n### Training steps (mode=train: forward + backward)\n\nfwd, bwd: the phases timed apart (phase=forward, "
      "phase=backward), total: the whole step (each with its % of peak). fwd+bwd / total near 1: the phases add up. "
      "Speedup: the baseline's step (the fastest impl of the same shape without a recipe, run the same way) over "
      "this one's. Flags: "
      "a phase measured while others took its CPUs (contended), short of its precision target (unconverged), whose "
      "precision stopped improving short of it (plateau), with samples dropped for a GPU slowdown (throttled), whose "
      "inputs do not outsize the cache (partly-cached), or faster than a measured ceiling allows (faster-than-*, "
      "above-roofline: that ceiling was slowed, and the % of peak reads too high).\n\n"
      "| case | dtype | device | recipe | impl | fwd | bwd | total | fwd+bwd / total | baseline | speedup | flags |\n"
      "|---|---|---|---|---|---:|---:|---:|---:|---|---:|---|\n";
  for (auto& r : rows) {
    auto ratio = r.phases_over_total();
    out += fmt::format("| {} {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", markdown_cell(r.op),
                       markdown_cell(r.shape), markdown_cell(r.dtype), markdown_cell(r.where),
                       markdown_cell(r.knobs.empty() ? r.recipe : r.recipe + " " + r.knobs), markdown_cell(r.impl),
                       time_cell(r.fwd_s, r.fwd_pct_peak), time_cell(r.bwd_s, r.bwd_pct_peak),
                       time_cell(r.total_s, r.total_pct_peak), ratio ? fmt::format("{:.2f}", *ratio) : "-",
                       // Without its own step the row has nothing to compare: not a missing baseline.
                       !r.total_s                ? "-"
                       : r.baseline_impl.empty() ? "none measured"
                                                 : markdown_cell(r.baseline_impl),
                       r.speedup ? fmt::format("{:.2f}x", *r.speedup) : "-",
                       r.flags.empty() ? "-" : fmt::format("{}", fmt::join(r.flags, ", ")));
  }
  return out;
}

nlohmann::json training_json(const std::vector<TrainingRow>& rows) {
  auto value = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json out = nlohmann::json::array();
  for (auto& r : rows)
    out.push_back(
        {{"device", r.device},
         {"op", r.op},
         {"shape", r.shape},
         {"dtype", r.dtype},
         {"threads", r.threads},
         {"recipe", r.recipe},
         {"knobs", r.knobs},
         {"impl", r.impl},
         {"fwd_s", value(r.fwd_s)},
         {"bwd_s", value(r.bwd_s)},
         {"total_s", value(r.total_s)},
         {"fwd_pct_peak", value(r.fwd_pct_peak)},
         {"bwd_pct_peak", value(r.bwd_pct_peak)},
         {"total_pct_peak", value(r.total_pct_peak)},
         {"phases_over_total", value(r.phases_over_total())},
         {"baseline_impl", r.baseline_impl.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.baseline_impl)},
         {"baseline_total_s", value(r.baseline_total_s)},
         {"speedup", value(r.speedup)},
         {"flags", r.flags},
         {"run", r.run}});
  return out;
}

std::string training_csv(const std::vector<TrainingRow>& rows) {
  std::string out =
      "device,op,shape,dtype,threads,recipe,knobs,impl,fwd_s,bwd_s,total_s,fwd_pct_peak,bwd_pct_peak,total_pct_peak,"
      "phases_over_total,baseline_impl,baseline_total_s,speedup,flags,run\n";
  auto num = [](const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : std::string(); };
  for (auto& r : rows)
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.device),
                       csv_field(r.op), csv_field(r.shape), r.dtype, r.threads, csv_field(r.recipe), csv_field(r.knobs),
                       csv_field(r.impl), num(r.fwd_s), num(r.bwd_s), num(r.total_s), num(r.fwd_pct_peak),
                       num(r.bwd_pct_peak), num(r.total_pct_peak), num(r.phases_over_total()),
                       csv_field(r.baseline_impl), num(r.baseline_total_s), num(r.speedup),
                       csv_field(fmt::format("{}", fmt::join(r.flags, " "))), csv_field(r.run));
  return out;
}

}  // namespace opmeter
