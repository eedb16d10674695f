#pragma once
// What the linear op's CUDA impls share with opmeter outside the plugin: which activations
// cuBLASLt's epilogue computes as the spec does (checked before a case reaches the plugin).
#include "ops/tensor/kernels.hpp"
#include "opmeter/op.hpp"

namespace opmeter::linear {

// none (BIAS), relu (RELU_BIAS) and gelu_tanh (GELU_BIAS: cuBLASLt's GELU is the tanh form).
// Any other activation: no, with the reason and where to measure it instead (named as an
// ln_linear_<act> op where `layernorm`, else as linear's act parameter).
Support cublaslt_epilogue_support(tensor::Act a, bool layernorm = false);

}  // namespace opmeter::linear
