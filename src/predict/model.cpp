// Fitting the four models of every group with k-fold cross-validation, and answering cases.
#include "predict/model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/dtype.hpp"
#include "opmeter/errors.hpp"
#include "util/text.hpp"
#include "util/interrupt.hpp"
#include "opmeter/result.hpp"

namespace opmeter::predict {

std::string_view to_string(ModelKind k) {
  switch (k) {
    case ModelKind::roofline: return "roofline";
    case ModelKind::analytic: return "analytic";
    case ModelKind::boosted: return "boosted";
    case ModelKind::forest: return "forest";
  }
  return "?";
}

std::optional<ModelKind> parse_model_kind(std::string_view s) {
  for (ModelKind k : kModelKinds)
    if (to_string(k) == s) return k;
  return std::nullopt;
}

ModelKind best_model(const std::map<ModelKind, ErrorStats>& cv) {
  ModelKind best = ModelKind::analytic;
  for (auto& [kind, stats] : cv)
    if (kind != ModelKind::roofline && (!cv.count(best) || stats.median_ape < cv.at(best).median_ape)) best = kind;
  return best;
}

const GroupModel* PredictModel::group(const std::string& key) const {
  for (const auto& g : groups)
    if (g.key == key) return &g;
  return nullptr;
}

namespace {

// Trees need enough cases to split on; below this a group keeps roofline and analytic only.
constexpr std::size_t kMinTreeCases = 10;

TreeSettings tree_settings(TreeKind kind, const FitSettings& s, std::uint64_t seed) {
  TreeSettings t;
  t.kind = kind;
  t.seed = seed;
  t.threads = std::max(1, s.threads);
  return t;
}

struct Trees {
  std::optional<TreeModel> boosted, forest;
};

// Trains both tree models on log(measured / analytic) with the analytic model's prediction as a
// feature.
Trees train_trees(const std::vector<const Sample*>& train, const AnalyticModel& a, const Ceilings& c,
                  const FeatureSpace& f, const FitSettings& s, std::uint64_t seed) {
  Matrix x;
  x.cols = f.names().size();
  std::vector<float> y;
  for (const Sample* p : train) {
    double base = a.predict(*p, c);
    x.add_row(f.row(*p, base));
    y.push_back(static_cast<float>(std::log(p->time_s / base)));
  }
  Trees t;
  t.boosted = TreeModel::train(x, y, tree_settings(TreeKind::boosted, s, seed));
  t.forest = TreeModel::train(x, y, tree_settings(TreeKind::forest, s, seed));
  return t;
}

double refine(const TreeModel& t, const FeatureSpace& f, const Sample& s, double analytic_s) {
  Matrix x;
  x.cols = f.names().size();
  x.add_row(f.row(s, analytic_s));
  return analytic_s * std::exp(t.predict(x).at(0));
}

GroupModel fit_group(const std::vector<Sample>& group, const Ceilings& c, const FitSettings& settings) {
  GroupModel g;
  const Case& first = group.front().kase;
  g.key = group_key(first);
  g.device = first.device;
  g.op = first.op;
  g.impl = first.impl;
  g.dtype = first.dtype;
  g.features = FeatureSpace::of(group);
  const std::uint64_t seed = settings.seed ^ stable_hash(g.key);  // a group's folds: its key and the seed only
  const std::size_t n = group.size();
  const auto folds = assign_folds(n, settings.folds, seed);
  const bool trees = n >= kMinTreeCases;

  std::map<ModelKind, std::vector<double>> oof;
  for (ModelKind k : kModelKinds)
    if (trees || k == ModelKind::roofline || k == ModelKind::analytic) oof[k].assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) oof[ModelKind::roofline][i] = roofline_time(group[i], c);
  for (int fold = 0; fold < settings.folds; ++fold) {
    throw_if_interrupted();  // per fold too: one group of many cases trains for a while
    std::vector<Sample> train_samples;
    std::vector<std::size_t> held;
    for (std::size_t i = 0; i < n; ++i) {
      if (folds[i] == fold) held.push_back(i);
      else train_samples.push_back(group[i]);
    }
    if (held.empty()) continue;
    AnalyticModel a = AnalyticModel::fit(train_samples, c);
    Trees t;
    if (trees) {
      std::vector<const Sample*> train;
      for (auto& s : train_samples) train.push_back(&s);
      t = train_trees(train, a, c, g.features, settings, seed + static_cast<std::uint64_t>(fold));
    }
    for (std::size_t i : held) {
      double base = a.predict(group[i], c);
      oof[ModelKind::analytic][i] = base;
      if (t.boosted) oof[ModelKind::boosted][i] = refine(*t.boosted, g.features, group[i], base);
      if (t.forest) oof[ModelKind::forest][i] = refine(*t.forest, g.features, group[i], base);
    }
  }

  std::vector<std::string> names;
  std::vector<double> measured;
  for (auto& s : group) {
    names.push_back(s.case_string);
    measured.push_back(s.time_s);
  }
  for (auto& [kind, predicted] : oof) g.cv[kind] = error_stats(names, measured, predicted, folds);
  g.best = best_model(g.cv);

  // The models kept: fitted on every case of the group.
  g.analytic = AnalyticModel::fit(group, c);
  if (trees) {
    std::vector<const Sample*> all;
    for (auto& s : group) all.push_back(&s);
    Trees t = train_trees(all, g.analytic, c, g.features, settings, seed);
    g.boosted = std::move(t.boosted);
    g.forest = std::move(t.forest);
  }
  for (std::size_t i = 0; i < n; ++i) {
    TrainingPoint p{group[i].case_string, group[i].flops, group[i].bytes, group[i].time_s, folds[i], {}};
    for (auto& [kind, predicted] : oof) p.predicted_s[kind] = predicted[i];
    g.points.push_back(std::move(p));
  }
  return g;
}

std::string known_devices(const std::map<std::string, Ceilings>& ceilings) {
  std::vector<std::string> names;
  for (auto& [device, c] : ceilings) names.push_back(device);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

PredictModel fit_model(const std::vector<Sample>& samples, const std::map<std::string, Ceilings>& ceilings,
                       const nlohmann::json& context, const FitSettings& settings) {
  if (settings.folds < 2) throw UsageError(fmt::format("--folds {}: k-fold cross-validation needs k >= 2", settings.folds));
  std::map<std::string, std::vector<Sample>> groups;
  std::size_t contended = 0, unconverged = 0;
  for (const auto& s : samples) {
    if (s.contended) {
      ++contended;  // its time is partly other processes': it would teach the model a slower machine
      continue;
    }
    unconverged += s.unconverged;
    groups[group_key(s.kase)].push_back(s);
  }
  PredictModel m;
  if (contended)
    m.notes.push_back(
        fmt::format("{} result{} flagged contended (measured while other processes took the CPUs) left "
                    "out of the training data: measure {} again on a quiet machine",
                    contended, contended == 1 ? "" : "s", contended == 1 ? "it" : "them"));
  if (unconverged)
    m.notes.push_back(
        fmt::format("{} training case{} flagged unconverged (the precision target was not reached): kept, "
                    "{} time{} less certain",
                    unconverged, unconverged == 1 ? "" : "s", unconverged == 1 ? "its" : "their",
                    unconverged == 1 ? " is" : "s are"));
  m.created = utc_now_iso();
  m.context = context;
  m.folds = settings.folds;
  std::set<std::string> sources;
  for (const auto& s : samples)
    if (!s.source.empty() && sources.insert(s.source).second) m.sources.push_back(s.source);

  std::vector<std::string> too_small;
  for (auto it = groups.begin(); it != groups.end();) {
    if (it->second.size() < static_cast<std::size_t>(settings.folds)) {
      too_small.push_back(fmt::format("{} ({} case{})", it->first, it->second.size(), it->second.size() == 1 ? "" : "s"));
      m.notes.push_back(fmt::format("{}: {} case{}, fewer than the {} that {}-fold cross-validation needs: left out",
                                    it->first, it->second.size(), it->second.size() == 1 ? "" : "s", settings.folds,
                                    settings.folds));
      m.left_out[it->first] = it->second.size();
      it = groups.erase(it);
    } else {
      ++it;
    }
  }
  if (groups.empty()) {
    if (too_small.empty())
      throw UsageError(contended ? fmt::format("no measured (ok) case to fit a model on: all {} were contended "
                                               "(measured while other processes took the CPUs)",
                                               contended)
                                 : std::string("no measured (ok) case to fit a model on"));
    // The contended results went before the groups were counted: say so here too, since the note
    // that says it is printed only with a model.
    throw UsageError(fmt::format(
        "no group has enough cases for {}-fold cross-validation, which needs at least {} measured cases per device, "
        "op, impl and dtype: {}{}. Measure more cases, or use fewer folds (--folds 2 needs 2 per group)",
        settings.folds, settings.folds, fmt::join(too_small, ", "),
        contended ? fmt::format("; besides these, {} flagged contended (measured while other processes took the "
                                "CPUs) {} left out: measure {} again on a quiet machine",
                                count_of(contended, "result"), contended == 1 ? "was" : "were",
                                contended == 1 ? "it" : "them")
                  : std::string()));
  }
  for (auto& [key, group] : groups) {
    throw_if_interrupted();  // a group's trees take seconds: Ctrl-C is noticed between them
    const std::string& device = group.front().kase.device;
    auto c = ceilings.find(device);
    if (c == ceilings.end())
      throw UsageError(fmt::format(
          "no ceilings for device {} (group {}): the roofline and analytic models need its peak FLOP/s and memory "
          "bandwidth. Give --calibration PROFILE (from opmeter calibrate{}), or results with peak and bandwidth cases "
          "measured on {} (devices with ceilings: {})",
          device, key, device == kHostDevice ? "" : " --device " + device, device, known_devices(ceilings)));
    m.ceilings[device] = c->second;
    m.groups.push_back(fit_group(group, c->second, settings));
    if (!m.groups.back().boosted)
      m.notes.push_back(fmt::format("{}: {}, fewer than the {} the tree models need: roofline and analytic only", key,
                                    count_of(group.size(), "case"), kMinTreeCases));
  }
  return m;
}

// --- the model file ---------------------------------------------------------------------------

namespace {

nlohmann::json point_json(const TrainingPoint& p) {
  nlohmann::json predicted = nlohmann::json::object();
  for (auto& [k, v] : p.predicted_s) predicted[std::string(to_string(k))] = v;
  return {{"case", p.case_string}, {"flops", p.flops},   {"bytes", p.bytes},
          {"measured_s", p.measured_s}, {"fold", p.fold}, {"predicted_s", predicted}};
}

ModelKind kind_from(const std::string& s) {
  auto k = parse_model_kind(s);
  if (!k) throw UsageError(fmt::format("unknown model '{}' (expected roofline, analytic, boosted or forest)", s));
  return *k;
}

TrainingPoint point_from(const nlohmann::json& j) {
  TrainingPoint p;
  p.case_string = j.at("case").get<std::string>();
  p.flops = j.at("flops").get<double>();
  p.bytes = j.at("bytes").get<double>();
  p.measured_s = j.at("measured_s").get<double>();
  p.fold = j.at("fold").get<int>();
  for (auto& [k, v] : j.at("predicted_s").items()) p.predicted_s[kind_from(k)] = v.get<double>();
  return p;
}

nlohmann::json group_json(const GroupModel& g) {
  nlohmann::json cv = nlohmann::json::object();
  for (auto& [k, s] : g.cv) cv[std::string(to_string(k))] = s.to_json();
  nlohmann::json points = nlohmann::json::array();
  for (auto& p : g.points) points.push_back(point_json(p));
  return {{"key", g.key},
          {"device", g.device},
          {"op", g.op},
          {"impl", g.impl},
          {"dtype", std::string(to_string(g.dtype))},
          {"features", g.features.to_json()},
          {"analytic", g.analytic.to_json()},
          {"boosted", g.boosted ? g.boosted->to_json() : nlohmann::json(nullptr)},
          {"forest", g.forest ? g.forest->to_json() : nlohmann::json(nullptr)},
          {"cv", cv},
          {"best", std::string(to_string(g.best))},
          {"points", points}};
}

GroupModel group_from(const nlohmann::json& j) {
  GroupModel g;
  g.key = j.at("key").get<std::string>();
  g.device = j.at("device").get<std::string>();
  g.op = j.at("op").get<std::string>();
  g.impl = j.at("impl").get<std::string>();
  auto dtype = parse_dtype(j.at("dtype").get<std::string>());
  if (!dtype) throw UsageError(fmt::format("group {}: unknown dtype '{}'", g.key, j.at("dtype").get<std::string>()));
  g.dtype = *dtype;
  g.features = FeatureSpace::from_json(j.at("features"));
  g.analytic = AnalyticModel::from_json(j.at("analytic"));
  if (!j.at("boosted").is_null()) g.boosted = TreeModel::from_json(j.at("boosted"));
  if (!j.at("forest").is_null()) g.forest = TreeModel::from_json(j.at("forest"));
  // A tree that loads may still not fit the group's features (a file edited by hand): one
  // prediction now, so that it fails here rather than in the middle of predicting.
  for (auto* tree : {g.boosted ? &*g.boosted : nullptr, g.forest ? &*g.forest : nullptr}) {
    if (!tree) continue;
    Matrix probe;
    probe.cols = g.features.names().size();
    probe.values.assign(probe.cols, 0.0f);
    for (double v : tree->predict(probe))
      if (!std::isfinite(v)) throw UsageError(fmt::format("group {}: its tree model predicts {}", g.key, v));
  }
  for (auto& [k, s] : j.at("cv").items()) g.cv[kind_from(k)] = ErrorStats::from_json(s);
  g.best = kind_from(j.at("best").get<std::string>());
  if (!g.cv.count(g.best)) throw UsageError(fmt::format("group {}: best model {} has no error statistics", g.key, to_string(g.best)));
  for (auto& p : j.at("points")) g.points.push_back(point_from(p));
  return g;
}

}  // namespace

nlohmann::json to_json(const PredictModel& m) {
  nlohmann::json ceilings = nlohmann::json::object();
  for (auto& [device, c] : m.ceilings) ceilings[device] = c.to_json();
  nlohmann::json groups = nlohmann::json::array();
  for (auto& g : m.groups) groups.push_back(group_json(g));
  return {{"schema", kPredictModelSchema}, {"created", m.created}, {"context", m.context},
          {"sources", m.sources},          {"folds", m.folds},     {"ceilings", ceilings},
          {"groups", groups},              {"notes", m.notes},     {"left_out", m.left_out}};
}

PredictModel model_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("not a model file: expected a JSON object with schema " + std::string(kPredictModelSchema));
  auto schema = j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
  if (schema != kPredictModelSchema) {
    if (schema.starts_with("opmeter-calibration/"))
      throw UsageError(fmt::format("this is a calibration profile ({}), not a model: fit a model with opmeter predict fit "
                                   "RESULTS... -o model.json [--calibration PROFILE]",
                                   schema));
    if (schema.empty())
      throw UsageError(fmt::format("not a model file: it has no schema (expected {})", kPredictModelSchema));
    if (schema == "opmeter-predict-model/1")
      throw UsageError(
          fmt::format("a model of an older opmeter (opmeter-predict-model/1), whose groups mixed hot and "
                      "cold cases: fit it again with opmeter predict fit (this opmeter writes {})",
                      kPredictModelSchema));
    throw UsageError(fmt::format("not a model file of this opmeter: its schema is {}, expected {}", schema,
                                 kPredictModelSchema));
  }
  try {
    PredictModel m;
    m.created = j.value("created", "");
    m.context = j.value("context", nlohmann::json::object());
    m.sources = j.value("sources", std::vector<std::string>{});
    m.folds = j.at("folds").get<int>();
    if (m.folds < 2 || m.folds > 1000)
      throw UsageError(fmt::format("folds {}: a fitted model's cross-validation has 2 to 1000 folds", m.folds));
    for (auto& [device, c] : j.at("ceilings").items()) m.ceilings[device] = Ceilings::from_json(c);
    for (auto& g : j.at("groups")) m.groups.push_back(group_from(g));
    m.notes = j.value("notes", std::vector<std::string>{});
    m.left_out = j.value("left_out", std::map<std::string, std::size_t>{});
    for (auto& g : m.groups)
      if (!m.ceilings.count(g.device)) throw UsageError(fmt::format("group {}: no ceilings for device {}", g.key, g.device));
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("malformed model file: {}", e.what()));
  }
}

namespace {
// Libraries' messages can run to a stack trace: an error names what went wrong in one line.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
}  // namespace

PredictModel read_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(fmt::format("model {}: is a directory; expected a model file written by opmeter predict fit", path));
  std::ifstream f(path);
  if (!f) throw UsageError(fmt::format("model {}: cannot open the file", path));
  nlohmann::json j;
  try {
    f >> j;
  } catch (const nlohmann::json::parse_error& e) {
    const auto format = detect_results_format(path);
    if (format != ResultsFormat::unknown)
      throw UsageError(fmt::format("model {}: not a model file (it is {})", path, describe(format)));
    // A model cut short (a full disk, a copy interrupted) or edited by hand.
    throw UsageError(fmt::format("model {}: not a model file: invalid JSON at byte {} (truncated or damaged?)", path,
                                 e.byte));
  }
  if (j.is_object() && !j.contains("schema") && j.contains("benchmarks"))
    throw UsageError(fmt::format("model {}: this is {}, not a model: fit one with opmeter predict fit {} -o model.json",
                                 path, describe(detect_results_format(path)), path));
  try {
    return model_from_json(j);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("model {}: {}", path, first_line(e.what())));
  } catch (const std::exception& e) {
    // What the tree library says of a model edited by hand (its message carries a stack trace).
    throw UsageError(fmt::format("model file {} is damaged: {}", path, first_line(e.what())));
  }
}

// --- predicting -------------------------------------------------------------------------------

namespace {

// What the model knows of a case that has no group: the first of device, op, impl, dtype and
// cache mode it never saw, in that order.
std::string never_saw(const PredictModel& m, const Case& c) {
  auto any = [&](auto pred) { return std::any_of(m.groups.begin(), m.groups.end(), pred); };
  if (!any([&](const GroupModel& g) { return g.device == c.device; })) return fmt::format("device {}", c.device);
  if (!any([&](const GroupModel& g) { return g.device == c.device && g.op == c.op; }))
    return fmt::format("op {} on {}", c.op, c.device);
  if (!any([&](const GroupModel& g) { return g.device == c.device && g.op == c.op && g.impl == c.impl; }))
    return fmt::format("impl {} of {} on {}", c.impl, c.op, c.device);
  if (!any([&](const GroupModel& g) {
        return g.device == c.device && g.op == c.op && g.impl == c.impl && g.dtype == c.dtype;
      }))
    return fmt::format("dtype {} of {}/{} on {}", to_string(c.dtype), c.op, c.impl, c.device);
  return fmt::format("{} cases of {}/{}/{} on {}", c.hot ? "hot (warm-cache)" : "cold", c.op, c.impl,
                     to_string(c.dtype), c.device);
}

}  // namespace

Prediction predict_case(const PredictModel& m, const Sample& s) {
  const std::string key = group_key(s.kase);
  const GroupModel* g = m.group(key);
  if (!g) {
    std::vector<std::string> known;
    for (auto& gm : m.groups) known.push_back(gm.key);
    throw UsageError(fmt::format("{}: the model never saw {} (it has no group {}); it knows {}", s.case_string,
                                 never_saw(m, s.kase), key, fmt::join(known, ", ")));
  }
  const Ceilings& c = m.ceilings.at(g->device);
  Prediction p;
  p.case_string = s.case_string;
  p.group = key;
  p.flops = s.flops;
  p.bytes = s.bytes;
  if (s.time_s > 0) p.measured_s = s.time_s;
  p.by_model[ModelKind::roofline] = roofline_time(s, c);
  const double base = g->analytic.predict(s, c);
  p.by_model[ModelKind::analytic] = base;
  if (g->boosted) p.by_model[ModelKind::boosted] = refine(*g->boosted, g->features, s, base);
  if (g->forest) p.by_model[ModelKind::forest] = refine(*g->forest, g->features, s, base);
  p.model = p.by_model.count(g->best) ? g->best : ModelKind::analytic;
  // A model off by a steady factor (the roofline of an older model file, a biased fit) would
  // print a point outside its own interval: the point is corrected by the held-out median ratio.
  const double raw = p.by_model.at(p.model);
  const auto stats = g->cv.find(p.model);
  const bool known = stats != g->cv.end();
  p.ratio = known ? stats->second.median_ratio : 1;
  p.time_s = raw * p.ratio;
  p.lo_s = raw * (known ? stats->second.lo : 1);
  p.hi_s = raw * (known ? stats->second.hi : 1);
  return p;
}

}  // namespace opmeter::predict
