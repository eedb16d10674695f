#pragma once
// What the learned models see of a case: its shape parameters, its work, its GEMM view and the
// analytic model's prediction.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/gemm_view.hpp"
#include "predict/sample.hpp"

namespace opmeter::predict {

// A case's GEMM view, as its op declares it (OpDef::gemm_view); nullopt for ops without one
// (elementwise, norms, ...), for unknown ops and for a view with an empty dimension.
std::optional<GemmView> gemm_view(const Case& c);

// The features of one group, fixed when the group is fitted and stored in the model file.
struct FeatureSpace {
  std::vector<std::string> numeric;  // integer params, each as log2(1 + value)
  // Params with other values (act=relu, kind=max): one-hot over the values seen when fitted.
  std::vector<std::pair<std::string, std::vector<std::string>>> categorical;

  // The params of a group's samples: integer-valued in every sample -> numeric, else categorical.
  static FeatureSpace of(const std::vector<Sample>& group);
  // Column names: the params, then log2 flops, log2 bytes, log2 intensity, the GEMM view's log2
  // m, n, k, count, log2 m*n, log2 of the smallest dimension, each dimension's fill of its last
  // 16-wide tile (0 without a GEMM view) and log2 of the analytic prediction in microseconds.
  std::vector<std::string> names() const;
  // One row in names() order. A param missing from the sample, or an integer param that is not
  // one, reads 0; an unseen categorical value sets none of its columns.
  std::vector<float> row(const Sample& s, double analytic_s) const;
  nlohmann::json to_json() const;
  static FeatureSpace from_json(const nlohmann::json& j);
};

}  // namespace opmeter::predict
