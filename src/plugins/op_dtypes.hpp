#pragma once
// The dtypes an op has forms of, for impls from outside opmeter (C plugins, users' Python
// kernels): they get their inputs from the op's spec and are checked by it, so a dtype the op has
// no form of would hand them another dtype's tensors under this one's name (fp32 data timed as
// "fp64", its bytes counted as 8-byte elements).
#include <string>
#include <vector>

#include "opmeter/dtype.hpp"

namespace opmeter {

// The dtypes of the impls registered for `op` (opmeter's own, on every backend it was built with,
// and those of plugins and kernels, which were checked against them when they were added), in
// all_dtypes() order.
std::vector<DType> op_dtypes(const std::string& op);

// Throws UsageError ("relu has no fp64 form; its dtypes are fp32, bf16, fp16") when `dtypes`
// holds one that `op` has no form of.
void check_op_dtypes(const std::string& op, const std::vector<DType>& dtypes);

}  // namespace opmeter
