#pragma once
// A fitted performance model file: per device, op, impl and dtype, the four models side by side
// with their cross-validated error, and the machine they were fitted on.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/analytic.hpp"
#include "predict/ceilings.hpp"
#include "predict/cross_validation.hpp"
#include "predict/features.hpp"
#include "predict/learned.hpp"
#include "predict/sample.hpp"

namespace opmeter::predict {

// /2: hot (warm-cache) cases are groups of their own ("/hot" keys); a /1 model mixed them.
inline constexpr const char* kPredictModelSchema = "opmeter-predict-model/2";

// roofline: no fitting; analytic: fitted constants; boosted: gradient-boosted trees; forest: a
// random forest (the baseline the boosted trees must beat). The learned ones predict
// log(time / analytic) from the features, so they refine the analytic model.
enum class ModelKind { roofline, analytic, boosted, forest };
inline constexpr ModelKind kModelKinds[] = {ModelKind::roofline, ModelKind::analytic, ModelKind::boosted,
                                            ModelKind::forest};
std::string_view to_string(ModelKind k);
std::optional<ModelKind> parse_model_kind(std::string_view s);

// A measured case of a group with its out-of-fold predictions.
struct TrainingPoint {
  std::string case_string;
  double flops = 0, bytes = 0, measured_s = 0;
  int fold = 0;
  std::map<ModelKind, double> predicted_s;  // held out: by the models fitted without its fold
};

struct GroupModel {
  std::string key;  // group_key: device/op/impl/dtype, and /hot for warm-cache cases
  std::string device, op, impl;
  DType dtype = DType::fp32;
  FeatureSpace features;
  AnalyticModel analytic;
  std::optional<TreeModel> boosted, forest;
  std::map<ModelKind, ErrorStats> cv;  // held-out error per model
  ModelKind best = ModelKind::analytic;  // best_model(cv)
  std::vector<TrainingPoint> points;
};

// The model with the lowest held-out median error, the roofline aside: a lower bound is no point
// estimate, and the analytic model is the roofline with fitted costs. Ties: the earlier kind.
ModelKind best_model(const std::map<ModelKind, ErrorStats>& cv);

struct PredictModel {
  std::string created;              // ISO 8601 UTC
  nlohmann::json context;           // the machine context of the results it was fitted on
  std::vector<std::string> sources; // the results files
  int folds = 5;
  std::map<std::string, Ceilings> ceilings;  // by device
  std::vector<GroupModel> groups;
  std::vector<std::string> notes;   // what was left out and why
  std::map<std::string, std::size_t> left_out;  // groups too small for the folds: key -> cases

  const GroupModel* group(const std::string& key) const;
};

struct FitSettings {
  int folds = 5;
  std::uint64_t seed = 20261123;
  int threads = 1;
};

// Fits every group with at least `folds` cases; smaller groups are named in notes. UsageError
// when no group has enough cases (the message says how many each has and how many k folds need)
// or when a group's device has no ceilings.
PredictModel fit_model(const std::vector<Sample>& samples, const std::map<std::string, Ceilings>& ceilings,
                       const nlohmann::json& context, const FitSettings& settings);

nlohmann::json to_json(const PredictModel& m);
// UsageError when j is not a model file of this schema (another schema is named).
PredictModel model_from_json(const nlohmann::json& j);
PredictModel read_model(const std::string& path);  // UsageError when unreadable or not a model

struct Prediction {
  std::string case_string, group;
  ModelKind model = ModelKind::analytic;  // the group's best
  // The best model's prediction x its held-out median ratio (ErrorStats::median_ratio), and its
  // interval: the prediction x [lo, hi]. So lo_s <= time_s <= hi_s.
  double time_s = 0, lo_s = 0, hi_s = 0;
  double ratio = 1;                      // that held-out median ratio: time_s = by_model[model] x ratio
  std::map<ModelKind, double> by_model;  // each model's own prediction, uncorrected
  double flops = 0, bytes = 0;
  std::optional<double> measured_s;       // when the case was measured (given as results)
  std::vector<std::string> extrapolated;  // what lies outside the training cases (training_range.hpp)
};

// UsageError when the model has no group for the case: the message names the op, impl, dtype or
// device it never saw and lists what it knows.
Prediction predict_case(const PredictModel& m, const Sample& s);

}  // namespace opmeter::predict
