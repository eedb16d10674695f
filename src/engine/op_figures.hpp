#pragma once
// The figures a measured result gets from its op: its rates from the op's work (unless the op
// says they would mislead, OpDef::no_rate), then the op's own derived metrics.
#include "opmeter/registry.hpp"
#include "opmeter/result.hpp"

namespace opmeter {

void derive_op_figures(const OpDef& op, Result& r);

}  // namespace opmeter
