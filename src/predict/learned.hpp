#pragma once
// Gradient-boosted trees and a random forest from libxgboost, trained on feature rows.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

namespace opmeter::predict {

// Row-major feature rows.
struct Matrix {
  std::size_t cols = 0;
  std::vector<float> values;
  std::size_t rows() const { return cols ? values.size() / cols : 0; }
  void add_row(const std::vector<float>& row);  // std::invalid_argument when its width differs
};

enum class TreeKind { boosted, forest };

struct TreeSettings {
  TreeKind kind = TreeKind::boosted;
  int rounds = 300;          // boosting rounds (boosted)
  int trees = 300;           // parallel trees (forest)
  int max_depth = 6;
  double eta = 0.1;          // learning rate (boosted; the forest uses 1)
  double subsample = 0.8;    // rows per tree
  double colsample = 0.8;    // columns per split
  std::uint64_t seed = 1;
  int threads = 1;           // the same threads give the same model
};

// Copies share one booster, which is only read after training.
class TreeModel {
 public:
  // std::invalid_argument when x and y differ in rows or a setting is below 1; std::runtime_error
  // with xgboost's message when training fails. Missing features are NaN.
  static TreeModel train(const Matrix& x, const std::vector<float>& y, const TreeSettings& s);
  std::vector<double> predict(const Matrix& x) const;  // std::invalid_argument on another width
  nlohmann::json to_json() const;  // {"kind": ..., "xgboost": <xgboost's JSON model>}
  static TreeModel from_json(const nlohmann::json& j);  // UsageError when malformed
  TreeKind kind() const { return kind_; }

 private:
  struct Booster;
  std::shared_ptr<Booster> booster_;
  TreeKind kind_ = TreeKind::boosted;
};

}  // namespace opmeter::predict
