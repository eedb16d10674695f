#include "analysis/quantization.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/doubtful_flags.hpp"
#include "analysis/run_where.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/linear.hpp"
#include "ops/transformer/transformer_block.hpp"
#include "util/human_units.hpp"
#include "util/markdown_cell.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {
// The keys the quantized linear declares (ops/linear/linear.hpp): its recipe and its mode.
using linear::kMode;
using linear::kQuant;

std::optional<double> metric(const Result& r, const std::string& name) {
  auto it = r.metrics.find(name);
  return it == r.metrics.end() ? std::nullopt : std::optional<double>(it->second.value);
}

// Whether `key` says how a recipe runs, not what is computed: the recipe itself, and every other
// optional parameter of the op but mode and phase (cuda_quant's ksplit and operand, the float8
// training knobs), as the op declares them. A baseline carries none of them.
bool recipe_setting(const Case& c, const std::string& key) {
  if (key == kQuant) return true;
  if (key == kMode || key == linear::kPhase) return false;
  const OpDef* op = Registry::global().op(c.op);
  return op && std::any_of(op->optional_params.begin(), op->optional_params.end(),
                           [&](const OptionalParam& p) { return p.key == key; });
}

// The case without its recipe settings: what a recipe result and its baseline share (impl aside),
// on one machine of a merged run.
std::string group_key(const Result& r) {
  const Case& c = r.kase;
  Case k = c;
  k.impl.clear();
  std::erase_if(k.params, [&c](auto& kv) { return recipe_setting(c, kv.first); });
  return machine_of(r) + "|" + k.to_string();
}

std::string shape_of(const Case& c) {
  Case k = c;
  std::erase_if(k.params, [](auto& kv) { return kv.first == kQuant || kv.first == kMode; });
  return k.params_string();
}

double int_param(const Case& c, const char* key) {
  try {
    return c.has(key) ? double(c.get_int(key)) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// Rows of the layer's input: batch x seq for the tensor ops, M for a GEMM.
double rows_of(const Case& c) {
  if (c.has("batch") && c.has("seq")) return int_param(c, "batch") * int_param(c, "seq");
  return int_param(c, "M");
}

// A layer's weights at the case's dtype where its parameters say (linear: hidden x out; a
// transformer block: its four matrices).
std::optional<double> plain_weight_bytes(const Result& r) {
  if (auto m = metric(r, "weight_bytes")) return m;
  const Case& c = r.kase;
  if (c.op == "transformer_block") return transformer::shape_of(c).weight_elems() * double(size_of(c.dtype));
  if (!c.has("hidden") || !c.has("out")) return std::nullopt;
  return int_param(c, "hidden") * int_param(c, "out") * double(size_of(c.dtype));
}

std::string opt(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "";
}

std::string bytes_cell(const std::optional<double>& bytes) { return bytes ? human_bytes(*bytes) : ""; }

}  // namespace

std::vector<QuantRow> quant_rows(const std::vector<Result>& results) {
  std::map<std::string, const Result*> baselines;  // the fastest result without a recipe
  for (auto& r : results) {
    if (r.status != Status::ok || r.kase.has(kQuant) || r.kase.impl == "reference" || !(r.summary.median > 0)) continue;
    auto& best = baselines[group_key(r)];
    if (!best || r.summary.median < best->summary.median) best = &r;
  }
  std::vector<QuantRow> rows;
  for (auto& r : results) {
    if (r.status != Status::ok || !r.kase.has(kQuant) || !(r.summary.median > 0)) continue;
    QuantRow row;
    row.device = r.kase.device;
    row.op = r.kase.op;
    row.shape = shape_of(r.kase);
    row.dtype = std::string(to_string(r.kase.dtype));
    row.mode = r.kase.get_or(kMode, "inference");
    row.threads = r.kase.threads;
    row.run = run_part(r);
    row.where = where_cell(r);
    row.m = rows_of(r.kase);
    row.recipe = r.kase.get(kQuant);
    row.impl = r.kase.impl;
    row.time_s = r.summary.median;
    row.sqnr_db = metric(r, "sqnr_db");
    row.max_abs_error = metric(r, "max_abs_error");
    row.weight_bytes = plain_weight_bytes(r);
    row.peak_memory_bytes = r.peak_memory_bytes;
    add_doubtful_flags(r, "", row.flags);
    if (auto it = baselines.find(group_key(r)); it != baselines.end()) {
      const Result& base = *it->second;
      row.baseline_impl = base.kase.impl;
      row.baseline_s = base.summary.median;
      row.speedup = base.summary.median / r.summary.median;
      row.baseline_weight_bytes = plain_weight_bytes(base);
      add_doubtful_flags(base, "baseline:", row.flags);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json quant_json(const std::vector<QuantRow>& rows) {
  auto value = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json out = nlohmann::json::array();
  for (auto& q : rows)
    out.push_back(
        {{"device", q.device},
         {"op", q.op},
         {"shape", q.shape},
         {"dtype", q.dtype},
         {"mode", q.mode},
         {"threads", q.threads},
         {"m", q.m},
         {"recipe", q.recipe},
         {"impl", q.impl},
         {"time_s", q.time_s},
         {"baseline_impl", q.baseline_impl.empty() ? nlohmann::json(nullptr) : nlohmann::json(q.baseline_impl)},
         {"baseline_s", value(q.baseline_s)},
         {"speedup", value(q.speedup)},
         {"sqnr_db", value(q.sqnr_db)},
         {"max_abs_error", value(q.max_abs_error)},
         {"weight_bytes", value(q.weight_bytes)},
         {"baseline_weight_bytes", value(q.baseline_weight_bytes)},
         {"peak_memory_bytes", value(q.peak_memory_bytes)},
         {"flags", q.flags},
         {"run", q.run}});
  return out;
}

std::string quant_csv(const std::vector<QuantRow>& rows) {
  std::string out =
      "device,op,shape,dtype,mode,threads,m,recipe,impl,time_s,baseline_impl,baseline_s,speedup,sqnr_db,max_abs_error,"
      "weight_bytes,baseline_weight_bytes,peak_memory_bytes,flags,run\n";
  auto num = [](const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : std::string(); };
  for (auto& q : rows)
    out += fmt::format("{},{},{},{},{},{},{},{},{},{:.6g},{},{},{},{},{},{},{},{},{},{}\n", csv_field(q.device),
                       csv_field(q.op), csv_field(q.shape), q.dtype, csv_field(q.mode), q.threads, q.m,
                       csv_field(q.recipe), csv_field(q.impl), q.time_s, csv_field(q.baseline_impl), num(q.baseline_s),
                       num(q.speedup), num(q.sqnr_db), num(q.max_abs_error), num(q.weight_bytes),
                       num(q.baseline_weight_bytes),
                       q.peak_memory_bytes ? std::to_string(*q.peak_memory_bytes) : std::string(),
                       csv_field(fmt::format("{}", fmt::join(q.flags, " "))), csv_field(q.run));
  return out;
}

std::string quant_markdown(const std::vector<QuantRow>& rows) {
  std::string out;
  for (const char* mode : {"inference", "train"}) {
    std::string body;
    for (auto& q : rows) {
      if (q.mode != mode) continue;
      const std::optional<double> ratio = q.weight_bytes && q.baseline_weight_bytes && *q.baseline_weight_bytes > 0
                                              ? std::optional<double>(*q.weight_bytes / *q.baseline_weight_bytes)
                                              : std::nullopt;
      body += fmt::format("| {} {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                          markdown_cell(q.op), markdown_cell(q.shape), markdown_cell(q.dtype), markdown_cell(q.where),
                          markdown_cell(q.recipe), markdown_cell(q.impl), human_time(q.time_s),
                          q.baseline_impl.empty() ? "none measured" : markdown_cell(q.baseline_impl),
                          opt(q.speedup, "{:.2f}x"), opt(q.sqnr_db, "{:.1f}"), opt(q.max_abs_error, "{:.3g}"),
                          bytes_cell(q.weight_bytes) + (ratio ? fmt::format(" ({:.2f}x)", *ratio) : ""),
                          q.peak_memory_bytes ? human_bytes(double(*q.peak_memory_bytes)) : "",
                          q.flags.empty() ? "-" : fmt::format("{}", fmt::join(q.flags, ", ")));
    }
    if (body.empty()) continue;
    const bool train = std::string(mode) == "train";
    // A step's SQNR is of what the layer stores (linear_train_check.cpp): its forward's product is
    // not kept where an activation follows.
    const char* sqnr = train ? "the step's y against fp64 (its product x W^T, before the bias, where no activation "
                               "follows; else y itself), as the layer stores it; its gradients' SQNR are in the results"
                             : "the recipe's product x W^T (before bias and activation) against the unquantized one, "
                               "in fp64";
    out += fmt::format(
        "\n### Quantization recipes ({})\n\nSpeedup: the baseline's median time (the fastest impl of the same shape "
        "without a recipe) over the recipe's. SQNR: {} (a transformer_block's: of its update y - x). Weights: the "
        "bytes of W as the impl keeps them (codes, scales and any padding of its layout). Peak memory: every input "
        "set of a cold case. Flags: the row's or its baseline's time measured while others took its CPUs "
        "(contended), short of its precision target (unconverged, plateau), partly from cache (partly-cached), with "
        "GPU samples dropped (throttled), or faster than a ceiling: its speedup is doubtful.\n\n"
        "| case | dtype | device | recipe | impl | time | baseline | speedup | SQNR (dB) | max abs error | weights "
        "(x baseline) | peak memory | flags |\n|---|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---|\n{}",
        train ? "training step: forward + backward" : mode, sqnr, body);
  }
  return out;
}

}  // namespace opmeter
