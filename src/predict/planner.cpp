// The sweep planner: uncertainty per second, picked greedily within a budget.
#include "predict/planner.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter::predict {

double parse_budget(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--budget '{}': {}; expected a duration such as 90 (seconds), 60s, 5m or 1h", text, why));
  };
  if (text.empty()) throw bad("empty");
  // Strictly a decimal number and a unit: stod alone would read 0x10 as 16 and " 5" as 5.
  static const std::regex kDuration(R"(([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?([a-z]*))");
  std::smatch match;
  if (!std::regex_match(text, match, kDuration)) throw bad("not a decimal number");
  double value = 0;
  try {
    value = std::stod(text);
  } catch (const std::exception&) {
    throw bad("out of range");
  }
  const std::string unit = match[4];
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60;
  else if (unit == "h") scale = 3600;
  else throw bad(fmt::format("unknown unit '{}' (s, m or h)", unit));
  if (!std::isfinite(value) || value <= 0) throw bad("must be positive");
  return value * scale;
}

double measuring_cost(double call_s, const Stopping& s) {
  call_s = std::max(call_s, 1e-9);
  const double overhead = kCaseOverheadS + 2 * call_s;
  const double warmup = s.warmup_calls > 0 ? double(s.warmup_calls) * call_s : std::max(s.warmup_s, call_s);
  const double sample_s = s.fixed_batch > 0 ? double(s.fixed_batch) * call_s : std::max(call_s, s.target_sample_s);
  double sampling = 0;
  if (s.fixed_samples > 0) {
    sampling = double(s.fixed_samples) * sample_s;
  } else {
    sampling = std::max(double(s.min_samples) * sample_s, s.min_time_s);
    if (s.timeout_s > 0) sampling = std::min(sampling, std::max(s.timeout_s, sample_s));
  }
  return overhead + warmup + sampling;
}

namespace {

using Row = std::vector<double>;

double distance(const Row& a, const Row& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum / std::max<std::size_t>(1, a.size()));
}

// Columns scaled by their range over `reference` rows (a constant column keeps its scale).
struct Scaler {
  Row lo, range;
  explicit Scaler(const std::vector<Row>& reference) {
    if (reference.empty()) return;
    lo = reference.front();
    Row hi = lo;
    for (auto& r : reference)
      for (std::size_t i = 0; i < r.size(); ++i) {
        lo[i] = std::min(lo[i], r[i]);
        hi[i] = std::max(hi[i], r[i]);
      }
    range.resize(lo.size());
    for (std::size_t i = 0; i < lo.size(); ++i) range[i] = hi[i] - lo[i] > 1e-12 ? hi[i] - lo[i] : 1;
  }
  Row operator()(const std::vector<float>& raw) const {
    Row r(raw.begin(), raw.end());
    for (std::size_t i = 0; i < r.size() && i < lo.size(); ++i) r[i] = (r[i] - lo[i]) / range[i];
    return r;
  }
};

double log_spread(const Prediction& p) {
  std::vector<double> logs;
  for (ModelKind k : {ModelKind::analytic, ModelKind::boosted, ModelKind::forest})
    if (auto it = p.by_model.find(k); it != p.by_model.end() && it->second > 0) logs.push_back(std::log(it->second));
  if (logs.size() < 2) return 0;
  double mean = 0;
  for (double v : logs) mean += v;
  mean /= double(logs.size());
  double var = 0;
  for (double v : logs) var += (v - mean) * (v - mean);
  return std::sqrt(var / double(logs.size()));
}

// A candidate as the planner weighs it.
struct Candidate {
  std::size_t index = 0;  // in the sweep
  std::string group;
  Row features;
  double spread = 0;      // disagreement of the models (seen groups)
  double nearest = 0;     // distance to the nearest training point or chosen case
  double radius = 1;      // the group's typical nearest-neighbour distance
  bool unseen = false;
  double predicted_s = 0, cost_s = 0;
  bool taken = false;

  double uncertainty() const {
    if (unseen) return kUnseenUncertainty + nearest;
    return spread * std::min(1.0, nearest / radius) + kDistanceWeight * nearest;
  }
};

double median_nearest(const std::vector<Row>& rows) {
  if (rows.size() < 2) return 1;
  std::vector<double> d;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < rows.size(); ++j)
      if (i != j) best = std::min(best, distance(rows[i], rows[j]));
    d.push_back(best);
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  return std::max(d[d.size() / 2], 1e-3);
}

// A seen group's candidates: features scaled over the training points, distance to the nearest.
void weigh_seen(const PredictModel& m, const GroupModel& g, const std::vector<Sample>& sweep,
                std::vector<Candidate*>& cands) {
  const Ceilings& c = m.ceilings.at(g.device);
  std::vector<std::vector<float>> raw_points;
  for (auto& p : g.points) {
    Sample s;
    try {
      s.kase = parse_case(p.case_string);
    } catch (const UsageError&) {
      continue;  // a case string this build cannot read: no anchor
    }
    s.case_string = p.case_string;
    s.flops = p.flops;
    s.bytes = p.bytes;
    raw_points.push_back(g.features.row(s, g.analytic.predict(s, c)));
  }
  std::vector<Row> plain;
  for (auto& r : raw_points) plain.emplace_back(r.begin(), r.end());
  Scaler scale(plain);
  std::vector<Row> points;
  for (auto& r : raw_points) points.push_back(scale(r));
  const double radius = median_nearest(points);
  for (Candidate* cand : cands) {
    const Sample& s = sweep[cand->index];
    Prediction p = predict_case(m, s);
    cand->predicted_s = p.time_s;
    cand->spread = log_spread(p);
    cand->features = scale(g.features.row(s, p.by_model.at(ModelKind::analytic)));
    cand->radius = radius;
    cand->nearest = std::numeric_limits<double>::infinity();
    for (auto& pt : points) cand->nearest = std::min(cand->nearest, distance(cand->features, pt));
    if (points.empty()) cand->nearest = 1;
  }
}

// A group the model never saw: features of its own, scaled over its candidates; the first pick is
// the candidate farthest from their centre.
void weigh_unseen(const PredictModel& m, const std::vector<Sample>& sweep, std::vector<Candidate*>& cands) {
  std::vector<Sample> group;
  for (Candidate* cand : cands) group.push_back(sweep[cand->index]);
  FeatureSpace f = FeatureSpace::of(group);
  std::vector<Row> plain;
  std::vector<std::vector<float>> raw;
  for (auto& s : group) {
    raw.push_back(f.row(s, 1e-6));
    plain.emplace_back(raw.back().begin(), raw.back().end());
  }
  Scaler scale(plain);
  Row centre;
  std::vector<Row> rows;
  for (auto& r : raw) rows.push_back(scale(r));
  if (!rows.empty()) {
    centre.assign(rows.front().size(), 0);
    for (auto& r : rows)
      for (std::size_t i = 0; i < r.size(); ++i) centre[i] += r[i] / double(rows.size());
  }
  for (std::size_t i = 0; i < cands.size(); ++i) {
    Candidate* cand = cands[i];
    const Sample& s = sweep[cand->index];
    cand->unseen = true;
    cand->features = rows[i];
    cand->nearest = distance(rows[i], centre);
    // No model: the roofline where the device's ceilings are known, else a guess of 1 ms.
    auto c = m.ceilings.find(s.kase.device);
    cand->predicted_s = c != m.ceilings.end() ? roofline_time(s, c->second) : 1e-3;
  }
}

}  // namespace

SweepPlan plan_sweep(const PredictModel& m, const std::vector<Sample>& sweep, const Stopping& stopping, double budget_s) {
  SweepPlan plan;
  plan.sweep_cases = sweep.size();
  plan.budget_s = budget_s;
  std::set<std::string> measured;
  for (auto& g : m.groups)
    for (auto& p : g.points) measured.insert(p.case_string);

  std::vector<Candidate> cands;
  std::set<std::string> seen_case;
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    if (!seen_case.insert(sweep[i].case_string).second) continue;
    if (measured.count(sweep[i].case_string)) {
      ++plan.measured;
      continue;
    }
    Candidate c;
    c.index = i;
    c.group = group_key(sweep[i].kase);
    cands.push_back(std::move(c));
  }
  plan.candidates = cands.size();

  std::map<std::string, std::vector<Candidate*>> by_group;
  for (auto& c : cands) by_group[c.group].push_back(&c);
  for (auto& [key, members] : by_group) {
    if (const GroupModel* g = m.group(key)) weigh_seen(m, *g, sweep, members);
    else {
      weigh_unseen(m, sweep, members);
      plan.notes.push_back(fmt::format("{}: the model never saw this group; its {} case{} come first, spread over its "
                                       "shapes",
                                       key, members.size(), members.size() == 1 ? "" : "s"));
    }
  }
  for (auto& c : cands) {
    c.cost_s = measuring_cost(c.predicted_s, stopping);
    plan.sweep_cost_s += c.cost_s;
  }

  double left = budget_s;
  for (;;) {
    Candidate* best = nullptr;
    double best_score = -1;
    for (auto& c : cands) {
      if (c.taken || c.cost_s > left) continue;
      const double score = c.uncertainty() / c.cost_s;
      if (score > best_score) {
        best_score = score;
        best = &c;
      }
    }
    if (!best) break;
    best->taken = true;
    left -= best->cost_s;
    const Sample& s = sweep[best->index];
    plan.chosen.push_back({s.case_string, best->group, best->predicted_s, best->cost_s, best->uncertainty(), best->unseen});
    plan.cost_s += best->cost_s;
    // Measuring it teaches the model about its neighbours.
    const bool first_of_unseen =
        best->unseen && std::none_of(plan.chosen.begin(), plan.chosen.end() - 1,
                                     [&](const PlannedCase& p) { return p.group == best->group; });
    for (Candidate* other : by_group[best->group]) {
      if (other->taken) continue;
      const double d = distance(other->features, best->features);
      other->nearest = first_of_unseen ? d : std::min(other->nearest, d);
    }
  }
  if (plan.chosen.empty() && !cands.empty()) {
    auto cheapest = std::min_element(cands.begin(), cands.end(), [](auto& a, auto& b) { return a.cost_s < b.cost_s; });
    plan.notes.push_back(fmt::format("no case fits in the budget of {:.3g} s: the cheapest, {}, needs about {:.3g} s",
                                     budget_s, sweep[cheapest->index].case_string, cheapest->cost_s));
  }
  return plan;
}

}  // namespace opmeter::predict
