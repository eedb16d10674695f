#pragma once
// The training parameters of the linear ops (phase and the float8 knobs, see linear.hpp): their
// OptionalParam declarations and their validation, one place for both.
#include <vector>

#include "opmeter/registry.hpp"

namespace opmeter::linear {
std::vector<OptionalParam> training_params();
// Throws CaseError naming the key, its value and what it takes, or why it does not apply here.
void validate_training_params(const Case& c);
}  // namespace opmeter::linear
