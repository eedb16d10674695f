// The linear ops' spec by recipe (spec_by_recipe.hpp): QuantLinearOp's for a case with `quant`,
// LinearOp's otherwise.
#include "ops/linear/quant_linear.hpp"
#include "ops/linear/spec_by_recipe.hpp"

namespace opmeter::linear {

std::unique_ptr<OpSpec> make_linear_spec() { return std::make_unique<SpecByRecipe<LinearOp, QuantLinearOp>>(); }

}  // namespace opmeter::linear
