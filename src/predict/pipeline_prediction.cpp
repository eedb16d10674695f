// Pipelines predicted layer by layer.
#include "predict/pipeline_prediction.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "predict/analytic.hpp"
#include "report/pipeline_labels.hpp"

namespace opmeter::predict {

std::optional<PipelineSpec> parse_pipeline_spec(const std::string& text) {
  PipelineSpec spec;
  const auto colon = text.find(':');
  spec.name = text.substr(0, colon);
  if (!pipeline::Registry::global().find(spec.name)) return std::nullopt;
  if (colon == std::string::npos) return spec;
  const std::string rest = text.substr(colon + 1);
  std::set<std::string> keys;
  std::size_t start = 0;
  while (start <= rest.size()) {
    auto comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw CaseError(fmt::format("pipeline '{}': '{}' is not key=value (e.g. {}:batch=1,dtype=bf16)", text, item,
                                  spec.name));
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!keys.insert(key).second) throw CaseError(fmt::format("pipeline '{}': '{}' is given twice", text, key));
    if (key == "dtype") {
      auto d = parse_dtype(value);
      if (!d) throw CaseError(fmt::format("pipeline '{}': unknown dtype '{}'", text, value));
      spec.dtype = *d;
    } else if (key == "device") {
      check_device(value);
      spec.device = value;
    } else if (key == "threads") {
      try {
        std::size_t used = 0;
        int t = std::stoi(value, &used);
        if (used != value.size() || t < 1) throw std::invalid_argument("threads");
        spec.threads = t;
      } catch (const std::exception&) {
        throw CaseError(fmt::format("pipeline '{}': threads={} is not a positive integer", text, value));
      }
    } else {
      spec.params.emplace_back(key, value);
    }
  }
  return spec;
}

namespace {
// The most common thread count of the training points of `device`'s groups whose op `ops` takes
// (ties: the smaller); nullopt when there are none.
template <class TakesOp>
std::optional<int> most_common_threads(const PredictModel& m, const std::string& device, TakesOp takes) {
  std::map<int, std::size_t> counts;
  for (const auto& g : m.groups) {
    if (g.device != device || !takes(g.op)) continue;
    for (const auto& p : g.points) {
      try {
        ++counts[parse_case(p.case_string).threads];
      } catch (const UsageError&) {
      }
    }
  }
  std::optional<int> best;
  std::size_t most = 0;
  for (auto& [threads, n] : counts)
    if (n > most) {
      most = n;
      best = threads;
    }
  return best;
}
}  // namespace

int usual_threads(const PredictModel& m, const std::string& device) {
  return most_common_threads(m, device, [](const std::string&) { return true; }).value_or(1);
}

int threads_for_pipeline(const PredictModel& m, const pipeline::Pipeline& p, const std::string& device) {
  std::set<std::string> ops;
  for (const auto& l : p.layers) ops.insert(l.kase.op);
  auto own = most_common_threads(m, device, [&](const std::string& op) { return ops.count(op) > 0; });
  return own ? *own : usual_threads(m, device);
}

namespace {
// A case of a group the model lacks, on a device whose ceilings it has: the roofline's time, a
// lower bound, so its interval is the time itself.
Prediction roofline_only(const Sample& s, const Ceilings& c) {
  Prediction p;
  p.case_string = s.case_string;
  p.group = group_key(s.kase);
  p.flops = s.flops;
  p.bytes = s.bytes;
  p.model = ModelKind::roofline;
  p.time_s = p.lo_s = p.hi_s = roofline_time(s, c);
  p.by_model[ModelKind::roofline] = p.time_s;
  return p;
}
}  // namespace

PipelinePrediction predict_pipeline(const PredictModel& m, const pipeline::Pipeline& p, const Case& like) {
  auto planned = pipeline::plan_pipeline(p, like, {}, false);
  std::set<std::string> trained;
  for (const auto& g : m.groups)
    for (const auto& pt : g.points) trained.insert(pt.case_string);

  PipelinePrediction out;
  out.name = p.name;
  out.params = p.params;
  out.dtype = std::string(to_string(p.dtype));
  out.device = like.device;
  if (like.on_host()) out.threads = like.threads;
  std::set<std::string> distinct;
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    // The first candidate impl the model knows; else the first one, whose error names what is missing.
    // Else the first whose group the fit left out; else the first one.
    auto& names = planned.candidates[i];
    std::optional<std::size_t> known, left_out;
    for (std::size_t k = 0; k < names.size() && !known; ++k) {
      planned.chosen[i] = k;
      const std::string key = group_key(planned.layer_case(i));
      if (m.group(key)) known = k;
      else if (!left_out && m.left_out.count(key)) left_out = k;
    }
    planned.chosen[i] = known ? *known : left_out.value_or(0);
    Case c = planned.layer_case(i);
    LayerPrediction l;
    l.label = p.layers[i].label;
    l.count = p.layers[i].count;
    const auto ceilings = m.ceilings.find(c.device);
    if (!known && left_out && ceilings != m.ceilings.end()) {
      l.prediction = roofline_only(sample_of(c), ceilings->second);
      const std::string key = group_key(c);
      const std::size_t n = m.left_out.at(key);
      out.notes.push_back(fmt::format(
          "layer '{}' ({}): predict fit left group {} out ({} case{}, fewer than its {} folds): predicted by the roofline "
          "alone, the time the ceilings allow (data in cache can beat it), with no interval. {} to predict it better",
          l.label, l.prediction.case_string, key, n, n == 1 ? "" : "s", m.folds,
          n >= 2 ? fmt::format("Fit with --folds {} or measure more shapes of it", n)
                 : std::string("Measure more shapes of it (a group needs at least 2 cases)")));
    } else {
      try {
        l.prediction = predict_case(m, sample_of(c));
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("pipeline {}: layer '{}' ({}; impls that run it here: {}): {}", p.name, l.label,
                                     c.op, fmt::join(names, ", "), e.what()));
      }
    }
    l.in_training = trained.count(l.prediction.case_string) > 0;
    if (distinct.insert(l.prediction.case_string).second) {
      ++out.distinct_cases;
      out.cases_in_training += l.in_training;
    }
    const double n = static_cast<double>(l.count);
    out.total_s += l.prediction.time_s * n;
    out.lo_s += l.prediction.lo_s * n;
    out.hi_s += l.prediction.hi_s * n;
    out.layers.push_back(std::move(l));
  }
  return out;
}

std::optional<double> measured_total(PipelinePrediction& p, const std::vector<pipeline::PipelineSummary>& measured) {
  if (measured.empty()) {
    p.notes.push_back(
        "the --measured results hold no pipeline results (no pipelines.json beside them): no measured "
        "total to compare with");
    return std::nullopt;
  }
  std::vector<std::string> others;                           // what the results hold instead, for the note
  const pipeline::PipelineSummary* other_threads = nullptr;  // the same pipeline at other threads
  for (const auto& s : measured) {
    bool same = s.name == p.name && s.dtype == p.dtype && s.device == p.device;
    for (const auto& [key, value] : p.params) same = same && s.param(key) == value;
    if (!same) {
      others.push_back(pipeline::display_name(s));
      continue;
    }
    // Like with like: a total measured at other threads is not this prediction's to be judged by.
    const auto threads = pipeline_threads(s);
    if (p.threads && !threads.empty() && threads != std::set<int>{*p.threads}) {
      if (!other_threads) other_threads = &s;
      continue;
    }
    if (s.complete && s.latency_s) return s.latency_s;
    p.notes.push_back(fmt::format("the measured {} is incomplete ({} layer(s) not measured): no measured total",
                                  pipeline::display_name(s), s.missing.size()));
    return std::nullopt;
  }
  if (other_threads) {
    const auto threads = pipeline_threads(*other_threads);
    std::vector<std::string> spec;
    for (const auto& [key, value] : p.params) spec.push_back(key + "=" + value);
    if (p.dtype != "fp32") spec.push_back("dtype=" + p.dtype);
    spec.push_back(fmt::format("threads={}", *threads.begin()));
    const std::string how = pipeline::Registry::global().find(p.name)
                                ? fmt::format("predict {}:{}", p.name, fmt::join(spec, ","))
                                : fmt::format("set threads: {} in its config", *threads.begin());
    p.notes.push_back(
        fmt::format("the --measured run ran it at threads={}, this prediction is at threads={}: not "
                    "compared. To compare like with like, {}",
                    fmt::join(threads, "+"), *p.threads, how));
  } else {
    p.notes.push_back(
        fmt::format("the --measured results hold no {} {} {} with these parameters (they hold {}): no "
                    "measured total",
                    p.name, p.dtype, p.device, fmt::join(others, ", ")));
  }
  return std::nullopt;
}

}  // namespace opmeter::predict
