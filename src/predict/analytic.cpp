// The roofline and the analytic model.
//
// Analytic model, per call (seconds):
//   t = overhead + max(compute, memory)
//   memory  = bytes / (bandwidth * memory_eff)
//   compute = flops * pad / (peak_avail * compute_eff) * (1 + k_half / K) * (1 + cache_penalty * X)
// where
//   peak_avail = peak of the dtype (Ceilings::peak_for; without any, 1 FLOP per byte of bandwidth
//                stands in and compute_eff absorbs the ratio), on the host scaled by
//                min(threads, ceiling threads) / ceiling threads: a case on fewer threads than
//                the ceilings were measured with gets their share.
//   pad        = for ops with a GEMM view (count GEMMs of M x N x K) and a tile, the work scheduled
//                over the work needed: tiles = ceil(count * ceil(M / tile_m) * ceil(N / tile_n)) run
//                in rounds = ceil(tiles / units) over `units` workers (the case's threads on a
//                CPU, Ceilings::sm_count on a GPU: waves), so pad = rounds * units * tile_m *
//                tile_n / (count * M * N) >= 1; 1 for ops without a view and without a tile.
//   K / (K + k_half) is the small-K efficiency (fixed costs of a tile's loads and stores spread
//                over fewer multiply-adds); K = 0 (no view) means none.
//   X          = on a CPU with a known cache and a GEMM view, log2 of how far a thread's share of
//                the operands (bytes / threads) overflows its share of the last-level cache
//                (cache_bytes / ceiling threads), 0 when it fits.
// Fitted per group (device, op, impl, dtype): overhead_s, compute_eff, memory_eff and, for ops
// with a GEMM view, k_half, the tile (tile_m x tile_n from a small candidate set: the best fit
// wins) and on a CPU cache_penalty: at most six constants, so the model generalises beyond the
// shapes it saw. The fit minimises the sum of squared log errors plus a weak pull of each constant
// (in log space) towards its starting value, which keeps constants that the data cannot decide
// (all shapes alike, no compute-bound case) at sensible values; NLopt's subplex, deterministic.
#include "predict/analytic.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlopt.h>

#include "opmeter/errors.hpp"
#include "predict/features.hpp"

namespace opmeter::predict {

namespace {

// Seconds at 100% efficiency, per sample, for one tile choice: what the fitted constants scale.
struct Terms {
  double compute = 0;  // flops * pad / peak_avail
  double memory = 0;   // bytes / bandwidth
  double k = 0;        // the GEMM view's K; 0 without one
  double excess = 0;   // X above
};

struct Params {
  double overhead = 0, compute_eff = 1, memory_eff = 1, k_half = 0, cache_penalty = 0;
};

double peak_avail(const Sample& s, const Ceilings& c) {
  double peak = 0;
  if (auto p = c.peak_for(s.kase.dtype))
    peak = *p * 1e9;
  else
    peak = c.memory_gbps > 0 ? c.memory_gbps * 1e9 : 1e9;  // stand-in; compute_eff absorbs it
  if (s.kase.on_host() && c.threads > 0)
    peak *= double(std::min(std::max(1, s.kase.threads), c.threads)) / double(c.threads);
  return peak;
}

Terms terms_of(const Sample& s, const std::optional<GemmView>& view, const Ceilings& c, double tile_m, double tile_n) {
  Terms t;
  double pad = 1;
  const bool host = s.kase.on_host();
  const int threads = std::max(1, s.kase.threads);
  if (view && tile_m >= 1 && tile_n >= 1) {
    const double needed = view->count * view->m * view->n;
    const double tiles = std::ceil(view->count * std::ceil(view->m / tile_m) * std::ceil(view->n / tile_n) - 1e-9);
    const double units = host ? double(threads) : c.sm_count > 0 ? double(c.sm_count) : tiles;
    const double rounds = std::ceil(tiles / units - 1e-9);
    pad = std::max(1.0, rounds * units * tile_m * tile_n / needed);
  }
  if (view) {
    t.k = view->k;
    if (host && c.cache_bytes > 0) {
      const double share = double(c.cache_bytes) / double(std::max(1, c.threads > 0 ? c.threads : threads));
      const double ws = s.bytes / double(threads);
      if (ws > share) t.excess = std::log2(ws / share);
    }
  }
  t.compute = s.flops * pad / peak_avail(s, c);
  t.memory = c.memory_gbps > 0 ? s.bytes / (c.memory_gbps * 1e9) : 0;
  return t;
}

double combine(const Terms& t, const Params& p) {
  double compute = t.compute / p.compute_eff;
  if (t.k > 0) compute *= 1 + p.k_half / t.k;
  compute *= 1 + p.cache_penalty * t.excess;
  return p.overhead + std::max(compute, t.memory / p.memory_eff);
}

double get(const std::map<std::string, double>& m, const char* key, double otherwise) {
  auto it = m.find(key);
  return it == m.end() ? otherwise : it->second;
}

Params params_of(const std::map<std::string, double>& m) {
  Params p;
  p.overhead = get(m, "overhead_s", 0);
  p.compute_eff = std::max(1e-12, get(m, "compute_eff", 1));  // a zero efficiency would divide by zero
  p.memory_eff = std::max(1e-12, get(m, "memory_eff", 1));
  p.k_half = get(m, "k_half", 0);
  p.cache_penalty = get(m, "cache_penalty", 0);
  return p;
}

// ---- fitting ----

constexpr double kPrior = 1e-3;  // weight of the pull towards the starting values, per constant

// Which constants a group fits, in log space, with their bounds.
struct Dim {
  double Params::* field;
  double lo, hi;
};

struct Problem {
  std::vector<Terms> terms;
  std::vector<double> log_t;
  std::vector<Dim> dims;
  std::vector<double> start;  // log values the prior pulls towards
  Params fixed;                // values of the constants not fitted
};

Params unpack(const Problem& pr, const double* x) {
  Params p = pr.fixed;
  for (std::size_t i = 0; i < pr.dims.size(); ++i) p.*(pr.dims[i].field) = std::exp(x[i]);
  return p;
}

double objective(const Problem& pr, const double* x) {
  const Params p = unpack(pr, x);
  double sse = 0;
  for (std::size_t i = 0; i < pr.terms.size(); ++i) {
    const double e = std::log(combine(pr.terms[i], p)) - pr.log_t[i];
    sse += e * e;
  }
  for (std::size_t i = 0; i < pr.dims.size(); ++i) sse += kPrior * (x[i] - pr.start[i]) * (x[i] - pr.start[i]);
  return std::isfinite(sse) ? sse : std::numeric_limits<double>::max();
}

double nlopt_objective(unsigned n, const double* x, double* grad, void* data) {
  (void)n;
  (void)grad;  // derivative-free
  return objective(*static_cast<const Problem*>(data), x);
}

// Minimises from x (updated in place); returns the objective at x.
double minimise(const Problem& pr, std::vector<double>& x, int max_evals) {
  const unsigned n = static_cast<unsigned>(x.size());
  nlopt_opt opt = nlopt_create(NLOPT_LN_SBPLX, n);
  if (!opt) return objective(pr, x.data());
  std::vector<double> lo(n), hi(n), step(n, 0.7);
  for (unsigned i = 0; i < n; ++i) {
    lo[i] = std::log(pr.dims[i].lo);
    hi[i] = std::log(pr.dims[i].hi);
    x[i] = std::clamp(x[i], lo[i], hi[i]);
  }
  nlopt_set_lower_bounds(opt, lo.data());
  nlopt_set_upper_bounds(opt, hi.data());
  nlopt_set_min_objective(opt, nlopt_objective, const_cast<Problem*>(&pr));
  nlopt_set_initial_step(opt, step.data());
  nlopt_set_maxeval(opt, max_evals);
  nlopt_set_xtol_abs1(opt, 1e-5);
  nlopt_set_ftol_rel(opt, 1e-10);
  std::vector<double> best = x;
  double f = std::numeric_limits<double>::max();
  nlopt_optimize(opt, x.data(), &f);  // a failed or stopped run keeps its best point
  nlopt_destroy(opt);
  const double before = objective(pr, best.data());
  if (!(f <= before)) {
    x = best;
    return before;
  }
  return f;
}

double percentile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * double(v.size() - 1);
  const auto i = static_cast<std::size_t>(at);
  return i + 1 < v.size() ? v[i] + (v[i + 1] - v[i]) * (at - double(i)) : v.back();
}

std::vector<std::pair<double, double>> tile_candidates(bool host) {
  const std::vector<double> sizes = host ? std::vector<double>{1, 8, 16, 32, 64, 128}
                                         : std::vector<double>{16, 32, 64, 128, 256};
  std::vector<std::pair<double, double>> out;
  for (double m : sizes)
    for (double n : sizes) out.emplace_back(m, n);
  return out;
}

}  // namespace

double roofline_time(const Sample& s, const Ceilings& c) {
  const double memory = c.memory_gbps > 0 ? s.bytes / (c.memory_gbps * 1e9) : 0;
  auto peak = c.peak_for(s.kase.dtype);
  if (!peak) return memory;
  return std::max(s.flops / peak_avail(s, c), memory);
}

double AnalyticModel::predict(const Sample& s, const Ceilings& c) const {
  // Without a tile (the default), no padding and no imbalance.
  return combine(terms_of(s, gemm_view(s.kase), c, get(constants, "tile_m", 0), get(constants, "tile_n", 0)),
                 params_of(constants));
}

AnalyticModel AnalyticModel::fit(const std::vector<Sample>& group, const Ceilings& c) {
  std::vector<const Sample*> measured;
  std::vector<std::optional<GemmView>> views;
  for (const Sample& s : group)
    if (s.time_s > 0 && std::isfinite(s.time_s)) {
      measured.push_back(&s);
      views.push_back(gemm_view(s.kase));
    }
  AnalyticModel model;
  model.constants = {{"overhead_s", 0}, {"compute_eff", 1}, {"memory_eff", 1}};
  if (measured.empty()) return model;

  const bool host = measured.front()->kase.on_host();
  const bool any_view = std::any_of(views.begin(), views.end(), [](auto& v) { return v.has_value(); });
  const bool cache = any_view && host && c.cache_bytes > 0;

  Problem pr;
  pr.log_t.reserve(measured.size());
  for (const Sample* s : measured) pr.log_t.push_back(std::log(s->time_s));
  auto fill_terms = [&](double tm, double tn) {
    pr.terms.clear();
    for (std::size_t i = 0; i < measured.size(); ++i) pr.terms.push_back(terms_of(*measured[i], views[i], c, tm, tn));
  };
  fill_terms(0, 0);  // untiled

  // Starting values from the data: the overhead below the fastest case, the efficiencies that
  // the better-running cases reach.
  std::vector<double> times, compute_share, memory_share;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    times.push_back(measured[i]->time_s);
    if (pr.terms[i].compute > 0) compute_share.push_back(pr.terms[i].compute / measured[i]->time_s);
    if (pr.terms[i].memory > 0) memory_share.push_back(pr.terms[i].memory / measured[i]->time_s);
  }
  const double min_t = *std::min_element(times.begin(), times.end());
  auto clamp_to = [](double v, double lo, double hi) { return std::clamp(std::isfinite(v) && v > 0 ? v : 1.0, lo, hi); };
  pr.dims = {{&Params::overhead, 1e-9, 1.0}, {&Params::compute_eff, 1e-4, 1e3}, {&Params::memory_eff, 1e-4, 1e3}};
  std::vector<double> start = {clamp_to(0.3 * min_t, 1e-9, 1.0), clamp_to(percentile_of(compute_share, 0.9), 1e-4, 1e3),
                               clamp_to(percentile_of(memory_share, 0.9), 1e-4, 1e3)};
  if (any_view) {
    pr.dims.push_back({&Params::k_half, 1e-2, 1e5});
    start.push_back(1.0);  // no small-K effect unless the data show one
  }
  if (cache) {
    pr.dims.push_back({&Params::cache_penalty, 1e-5, 1e2});
    start.push_back(1e-3);
  }
  for (double& v : start) v = std::log(v);
  pr.start = start;
  pr.fixed = Params{};

  std::vector<double> x = start;
  double best_f = minimise(pr, x, 1500);
  std::pair<double, double> best_tile{0, 0};
  if (any_view) {
    // Tiles are discrete: a short fit for each candidate from the untiled fit; the best one
    // stays, if it beats no tile at all (tile 0 x 0).
    std::vector<double> from = x;
    std::vector<double> best_x = x;
    for (auto [tm, tn] : tile_candidates(host)) {
      fill_terms(tm, tn);
      std::vector<double> y = from;
      const double f = minimise(pr, y, 250);
      if (f < best_f - 1e-12) best_f = f, best_x = y, best_tile = {tm, tn};
    }
    fill_terms(best_tile.first, best_tile.second);
    x = best_x;
  }
  minimise(pr, x, 3000);
  minimise(pr, x, 1000);  // a restart: subplex may stop short at a kink of the max()

  const Params p = unpack(pr, x.data());
  model.constants = {{"overhead_s", p.overhead}, {"compute_eff", p.compute_eff}, {"memory_eff", p.memory_eff}};
  if (any_view) {
    model.constants["k_half"] = p.k_half;
    model.constants["tile_m"] = best_tile.first;
    model.constants["tile_n"] = best_tile.second;
  }
  if (cache) model.constants["cache_penalty"] = p.cache_penalty;
  return model;
}

nlohmann::json AnalyticModel::to_json() const { return {{"constants", constants}}; }

AnalyticModel AnalyticModel::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("constants") || !j["constants"].is_object())
    throw UsageError("analytic model: expected {\"constants\": {name: number, ...}}, got " + j.dump());
  AnalyticModel m;
  for (auto& [k, v] : j["constants"].items()) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      throw UsageError(fmt::format("analytic model: constant '{}' must be a non-negative number, got {}", k, v.dump()));
    // A fitted model's: an efficiency of 0 would predict forever, an overhead of 1e308 s print 300 digits.
    if ((k == "compute_eff" || k == "memory_eff") && !(v.get<double>() > 0))
      throw UsageError(fmt::format("analytic model: '{}' must be above 0, got {}", k, v.dump()));
    if (k == "overhead_s" && v.get<double>() > 1e3)
      throw UsageError(fmt::format("analytic model: 'overhead_s' {} is more than 1000 s a call", v.dump()));
    m.constants[k] = v.get<double>();
  }
  return m;
}

}  // namespace opmeter::predict
