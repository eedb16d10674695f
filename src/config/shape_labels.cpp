#include "config/shape_labels.hpp"

#include <algorithm>

namespace opmeter {

bool takes_matrix_shapes(const OpDef& op) {
  return op.from_matrix_shape || op.params == std::vector<std::string>{"M", "N", "K"};
}

std::vector<ShapeLabel> shape_labels(const std::vector<MatShape>& shapes, const OpDef& op) {
  std::vector<ShapeLabel> out;
  for (auto& s : shapes) {
    if (s.label.empty()) continue;
    if (op.from_matrix_shape) out.push_back({op.from_matrix_shape(s.m, s.k, s.n), s.label});
    else out.push_back({{{"M", std::to_string(s.m)}, {"N", std::to_string(s.n)}, {"K", std::to_string(s.k)}}, s.label});
  }
  return out;
}

std::string label_for(const Case& c, const std::vector<ShapeLabel>& labels) {
  for (auto& l : labels)
    if (std::all_of(l.params.begin(), l.params.end(), [&](auto& kv) { return c.has(kv.first) && c.get(kv.first) == kv.second; }))
      return l.label;
  return "";
}

}  // namespace opmeter
