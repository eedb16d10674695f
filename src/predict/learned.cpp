// Gradient-boosted trees and random forests over libxgboost's C API. Every handle is owned by an
// RAII wrapper and every return code is checked: xgboost reports failures only through them.
#include "predict/learned.hpp"

#include <xgboost/c_api.h>

#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "opmeter/errors.hpp"

namespace opmeter::predict {

namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("xgboost: ") + what + ": " + XGBGetLastError());
}

// xgboost logs warnings and progress to stderr; opmeter's output is its own, so the library is
// silenced before its first use. Its global configuration is per thread: each thread sets it.
void silence_xgboost() {
  thread_local bool silenced = false;
  if (silenced) return;
  check(XGBSetGlobalConfig(R"({"verbosity": 0})"), "setting global verbosity");
  silenced = true;
}

struct DMatrixDeleter {
  void operator()(void* h) const { XGDMatrixFree(h); }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;

// A DMatrix over x's rows; NaN marks a missing feature.
DMatrix make_dmatrix(const Matrix& x) {
  DMatrixHandle h = nullptr;
  check(XGDMatrixCreateFromMat(x.values.data(), x.rows(), x.cols, std::numeric_limits<float>::quiet_NaN(), &h),
        "creating a DMatrix");
  return DMatrix(h);
}

const char* kind_name(TreeKind k) { return k == TreeKind::forest ? "forest" : "boosted"; }

// Shortest decimal text of a setting, as xgboost parses it ("0.1", not "0.100000").
std::string number(double v) {
  nlohmann::json j = v;
  return j.dump();
}

// A tree's children: both -1 (a leaf), or two other nodes of the tree, each reached once from the
// root (a node id freed by pruning may be reused, so a child may come before its parent). xgboost
// follows them unchecked: one out of range reads outside the tree, one pointing back loops forever.
void check_children(const nlohmann::json& tree, std::size_t t) {
  const auto left = tree.value("left_children", nlohmann::json::array());
  const auto right = tree.value("right_children", nlohmann::json::array());
  const auto where = [&](std::size_t i) { return "tree model: tree " + std::to_string(t) + " node " + std::to_string(i); };
  if (!left.is_array() || !right.is_array() || left.size() != right.size() || left.empty())
    throw UsageError("tree model: tree " + std::to_string(t) + " has no matching left_children and right_children");
  const auto n = static_cast<std::int64_t>(left.size());
  std::vector<std::int64_t> l(left.size()), r(left.size());
  for (std::size_t i = 0; i < left.size(); ++i) {
    if (!left[i].is_number_integer() || !right[i].is_number_integer())
      throw UsageError(where(i) + ": its children are not integers");
    l[i] = left[i].get<std::int64_t>();
    r[i] = right[i].get<std::int64_t>();
    const bool leaf = l[i] == -1 && r[i] == -1;
    const auto self = static_cast<std::int64_t>(i);
    if (!leaf && (l[i] <= 0 || r[i] <= 0 || l[i] >= n || r[i] >= n || l[i] == r[i] || l[i] == self || r[i] == self))
      throw UsageError(where(i) + ": children " + std::to_string(l[i]) + " and " + std::to_string(r[i]) +
                       " are not two other nodes of a tree of " + std::to_string(n));
  }
  std::vector<bool> reached(left.size(), false);
  std::vector<std::int64_t> todo{0};
  reached[0] = true;
  while (!todo.empty()) {
    const auto i = static_cast<std::size_t>(todo.back());
    todo.pop_back();
    if (l[i] == -1) continue;
    for (auto child : {l[i], r[i]}) {
      if (reached[static_cast<std::size_t>(child)])
        throw UsageError(where(i) + ": child " + std::to_string(child) + " is reached twice from the root (a loop?)");
      reached[static_cast<std::size_t>(child)] = true;
      todo.push_back(child);
    }
  }
}

// xgboost trusts a tree's split features: one past the feature count (a model edited by hand)
// reads outside the row. Checked before loading.
void check_split_features(const nlohmann::json& model) {
  const auto& learner = model.at("learner");
  if (!learner.is_object()) return;  // xgboost says what is wrong with it
  const auto param = learner.value("/learner_model_param/num_feature"_json_pointer, nlohmann::json());
  const auto trees = learner.value("/gradient_booster/model/trees"_json_pointer, nlohmann::json());
  if (!param.is_string() || !trees.is_array()) return;  // another layout: xgboost checks it
  std::size_t features = 0;
  try {
    features = std::stoul(param.get<std::string>());
  } catch (const std::exception&) {
    throw UsageError("tree model: its feature count is not a number");
  }
  for (std::size_t t = 0; t < trees.size(); ++t) {
    if (!trees[t].is_object()) throw UsageError("tree model: tree " + std::to_string(t) + " is not an object");
    check_children(trees[t], t);
    const auto splits = trees[t].value("split_indices", nlohmann::json::array());
    for (const auto& f : splits)
      if (!f.is_number_unsigned() || f.get<std::size_t>() >= features)
        throw UsageError("tree model: tree " + std::to_string(t) + " splits on feature " + f.dump() + " of " +
                         std::to_string(features));
  }
}

}  // namespace

struct TreeModel::Booster {
  BoosterHandle handle = nullptr;
  Booster() = default;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster() {
    if (handle) XGBoosterFree(handle);
  }
  void set(const char* name, const std::string& value) {
    check(XGBoosterSetParam(handle, name, value.c_str()), (std::string("setting ") + name).c_str());
  }
};

void Matrix::add_row(const std::vector<float>& row) {
  if (cols == 0 && values.empty()) cols = row.size();
  if (row.size() != cols || cols == 0)
    throw std::invalid_argument("feature row of width " + std::to_string(row.size()) + " in a matrix of width " +
                                std::to_string(cols));
  values.insert(values.end(), row.begin(), row.end());
}

TreeModel TreeModel::train(const Matrix& x, const std::vector<float>& y, const TreeSettings& s) {
  if (x.cols == 0 || x.rows() == 0) throw std::invalid_argument("no training rows");
  if (x.values.size() != x.rows() * x.cols) throw std::invalid_argument("matrix values are not whole rows");
  if (y.size() != x.rows())
    throw std::invalid_argument(std::to_string(x.rows()) + " training rows but " + std::to_string(y.size()) +
                                " targets");
  if (s.max_depth < 1 || s.threads < 1 || (s.kind == TreeKind::boosted ? s.rounds : s.trees) < 1)
    throw std::invalid_argument("tree settings need max_depth, threads and rounds (or trees) of at least 1");
  silence_xgboost();

  DMatrix dtrain = make_dmatrix(x);
  check(XGDMatrixSetFloatInfo(dtrain.get(), "label", y.data(), y.size()), "setting labels");

  auto booster = std::make_shared<Booster>();
  DMatrixHandle train_set[] = {dtrain.get()};
  check(XGBoosterCreate(train_set, 1, &booster->handle), "creating a booster");
  booster->set("verbosity", "0");
  booster->set("objective", "reg:squarederror");
  // Exact greedy splits: the training sets are a few hundred cases, where sketching features
  // into histogram bins only loses resolution.
  booster->set("tree_method", "exact");
  booster->set("max_depth", std::to_string(s.max_depth));
  // xgboost reads its seed as a signed integer: the low 31 bits of ours.
  booster->set("seed", std::to_string(s.seed & 0x7fffffff));
  booster->set("nthread", std::to_string(s.threads));
  booster->set("subsample", number(s.subsample));
  // xgboost 1.7 starts every model at 0.5 (it estimates the intercept only from 2.0 on); starting
  // at the targets' mean spares the trees learning the offset, which a forest (one round) cannot.
  double mean = 0;
  for (float v : y) mean += v;
  booster->set("base_score", number(mean / static_cast<double>(y.size())));

  int iterations = 1;
  if (s.kind == TreeKind::boosted) {
    booster->set("eta", number(s.eta));
    booster->set("colsample_bytree", number(s.colsample));
    iterations = s.rounds;
  } else {
    // xgboost's random forest: one round of `trees` parallel trees, each on a row sample and
    // choosing each split among a column sample, averaged (eta 1; xgboost divides by the count).
    booster->set("num_parallel_tree", std::to_string(s.trees));
    booster->set("colsample_bynode", number(s.colsample));
    booster->set("eta", "1");
  }
  for (int i = 0; i < iterations; ++i) check(XGBoosterUpdateOneIter(booster->handle, i, dtrain.get()), "training");

  TreeModel m;
  m.booster_ = std::move(booster);
  m.kind_ = s.kind;
  return m;
}

std::vector<double> TreeModel::predict(const Matrix& x) const {
  if (!booster_) throw std::logic_error("predict on a tree model that was never trained or loaded");
  bst_ulong features = 0;
  check(XGBoosterGetNumFeature(booster_->handle, &features), "reading the feature count");
  if (x.cols != features)
    throw std::invalid_argument("rows of width " + std::to_string(x.cols) + " for a tree model of " +
                                std::to_string(features) + " features");
  if (x.rows() == 0) return {};
  DMatrix d = make_dmatrix(x);
  const bst_ulong* shape = nullptr;
  bst_ulong dims = 0;
  const float* out = nullptr;
  const char* config = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  check(XGBoosterPredictFromDMatrix(booster_->handle, d.get(), config, &shape, &dims, &out), "predicting");
  bst_ulong n = 1;
  for (bst_ulong i = 0; i < dims; ++i) n *= shape[i];
  if (n != x.rows())
    throw std::runtime_error("xgboost: " + std::to_string(n) + " predictions for " + std::to_string(x.rows()) +
                             " rows");
  // The buffer belongs to the booster and is reused by its next call: copied out now.
  return std::vector<double>(out, out + n);
}

nlohmann::json TreeModel::to_json() const {
  if (!booster_) throw std::logic_error("to_json on a tree model that was never trained or loaded");
  bst_ulong len = 0;
  const char* buf = nullptr;
  check(XGBoosterSaveModelToBuffer(booster_->handle, R"({"format": "json"})", &len, &buf), "saving the model");
  return {{"kind", kind_name(kind_)}, {"xgboost", nlohmann::json::parse(buf, buf + len)}};
}

TreeModel TreeModel::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("tree model: expected an object with \"kind\" and \"xgboost\"");
  auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string() || (*kind != "boosted" && *kind != "forest"))
    throw UsageError("tree model: \"kind\" must be \"boosted\" or \"forest\"");
  auto model = j.find("xgboost");
  if (model == j.end() || !model->is_object() || !model->contains("learner"))
    throw UsageError("tree model: \"xgboost\" must hold an xgboost JSON model");
  check_split_features(*model);
  silence_xgboost();

  auto booster = std::make_shared<Booster>();
  check(XGBoosterCreate(nullptr, 0, &booster->handle), "creating a booster");
  const std::string text = model->dump();
  if (XGBoosterLoadModelFromBuffer(booster->handle, text.data(), text.size()) != 0)
    throw UsageError(std::string("tree model: xgboost cannot load it: ") + XGBGetLastError());
  booster->set("verbosity", "0");
  // Predicting a few hundred rows: one thread, so loading a model never competes with the run.
  booster->set("nthread", "1");

  TreeModel m;
  m.booster_ = std::move(booster);
  m.kind_ = *kind == "forest" ? TreeKind::forest : TreeKind::boosted;
  return m;
}

}  // namespace opmeter::predict
