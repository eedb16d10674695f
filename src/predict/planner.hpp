#pragma once
// `opmeter predict plan`: which cases of a sweep to measure next, within a time budget, so that
// the model learns the most (active learning). Pure: no measuring, no I/O.
#include <cstddef>
#include <string>
#include <vector>

#include "opmeter/engine.hpp"
#include "predict/model.hpp"
#include "predict/sample.hpp"

namespace opmeter::predict {

// "60s", "5m", "1h", "90" (seconds), "1.5h" -> seconds. UsageError for anything else, zero or
// a negative budget.
double parse_budget(const std::string& text);

// Fixed cost of a case besides its timed calls: setup, fresh random inputs, the correctness
// checks against the reference before and after timing, writing the result.
inline constexpr double kCaseOverheadS = 0.2;

// Estimated wall time of measuring a case whose call takes `call_s`, under `stopping`:
//   overhead (kCaseOverheadS + 2 checked calls)
//   + warm-up (warmup_calls calls, else warmup_s, at least one call)
//   + sampling: fixed_samples samples, else max(min_samples samples, min_time_s), at most
//     timeout_s; a sample lasts max(call, target_sample_s) (short calls are batched), or
//     fixed_batch calls.
// It assumes the precision target is met at the minimum count and time; noisy cases take longer.
double measuring_cost(double call_s, const Stopping& stopping);

struct PlannedCase {
  std::string case_string, group;
  double predicted_s = 0;   // the best model's prediction (the roofline's for an unseen group)
  double cost_s = 0;        // measuring_cost of it
  double uncertainty = 0;   // when it was picked
  bool unseen_group = false;  // the model has no group for it
};

struct SweepPlan {
  std::vector<PlannedCase> chosen;  // in the order picked
  std::size_t sweep_cases = 0;      // the config's cases
  std::size_t measured = 0;         // of them, already in the model's training points
  std::size_t candidates = 0;       // the rest
  double budget_s = 0, cost_s = 0;  // the budget and the chosen cases' estimated cost
  double sweep_cost_s = 0;          // estimated cost of measuring every candidate
  std::vector<std::string> notes;
};

// Uncertainty of a candidate of a group the model knows:
//   spread x min(1, d / r) + kDistanceWeight x d
// spread: the standard deviation of the log predictions of the analytic, boosted and forest
// models (their disagreement); d: the Euclidean distance in the group's feature space, each
// column scaled by its range over the training points, divided by sqrt(columns), to the nearest
// training point or case chosen so far; r: the median of the training points' nearest-neighbour
// distances (a case near a measured one gains little from its models' disagreement).
// A group the model never saw: kUnseenUncertainty + d over the group's own candidates and the
// cases chosen of it (the first is the one farthest from the rest's centre: space filling).
inline constexpr double kDistanceWeight = 1.0;
inline constexpr double kUnseenUncertainty = 10.0;

// Greedy: repeatedly picks the candidate with the highest uncertainty per estimated second that
// still fits in the budget, then updates the distances of its group's candidates. Ties go to the
// earlier case of the sweep, so the same inputs give the same plan.
SweepPlan plan_sweep(const PredictModel& m, const std::vector<Sample>& sweep, const Stopping& stopping, double budget_s);

}  // namespace opmeter::predict
