#pragma once
// Shape labels (`attn.wqkv` from the llama generator) carried to the cases made from the shapes.
// A label names a case for its readers; it is no part of the case's identity.
#include <string>
#include <utility>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/shapes.hpp"

namespace opmeter {

struct ShapeLabel {
  std::vector<std::pair<std::string, std::string>> params;  // what the shape sets in a case
  std::string label;
};

// Whether an op's cases are made from matrix shapes: it maps them itself, or its parameters are
// GEMM's M, N, K.
bool takes_matrix_shapes(const OpDef& op);
// The labelled shapes among `shapes`, as the parameters they give a case of `op`.
std::vector<ShapeLabel> shape_labels(const std::vector<MatShape>& shapes, const OpDef& op);
// The label of the first shape whose parameters the case carries; empty when none.
std::string label_for(const Case& c, const std::vector<ShapeLabel>& labels);

}  // namespace opmeter
