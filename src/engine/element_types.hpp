// The element types a case computes on, read from its op's spec: inputs, then the output, e.g.
// "A u8, B s8 -> C s32". A dtype names the inputs; what the rest are may differ by device (a bf16
// GEMM writes an fp32 C on the CPU and a bf16 C on CUDA; an int8 GEMM is u8 x s8 on the CPU and
// s8 x s8 on CUDA), so every result records it (details "types") and compare flags a case whose
// types differ between the two runs. An input the impls hold otherwise says so: a quantized
// layer's "w bf16 (as u4 codes with a scale and zero per 64 inputs)". Two runs of a case must
// agree on the element types alone (element_types_compared).
#pragma once
#include <string>

#include "opmeter/case.hpp"

namespace opmeter {

// Empty for an op without a spec (its impls run in-process only) or a case its spec refuses.
std::string element_types(const Case& c);
// The types without how inputs are held: results written before the "(as ...)" notes compare
// equal to later ones of the same arithmetic.
std::string element_types_compared(const std::string& types);

}  // namespace opmeter
