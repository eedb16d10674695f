#pragma once
// An activation chosen at run time (a uniform switch in an epilogue), with the spec's formulas.
#include "ops/linear/cuda/linear_act_math.cuh"

namespace opmeter::linear::quant_cuda {

__device__ inline float apply_act(tensor::Act a, float v) {
  using tensor::Act;
  switch (a) {
    case Act::relu: return activate<Act::relu>(v);
    case Act::relu6: return activate<Act::relu6>(v);
    case Act::leaky_relu: return activate<Act::leaky_relu>(v);
    case Act::gelu: return activate<Act::gelu>(v);
    case Act::gelu_tanh: return activate<Act::gelu_tanh>(v);
    case Act::silu: return activate<Act::silu>(v);
    case Act::sigmoid: return activate<Act::sigmoid>(v);
    case Act::hardswish: return activate<Act::hardswish>(v);
    default: return v;
  }
}

}  // namespace opmeter::linear::quant_cuda
