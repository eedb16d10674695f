#pragma once
// A transformer block's four projections as its CPU impls wire them for one input set: each impl
// says once where each projection reads and writes (a ProjectionStep per projection), and both
// of its paths, oneDNN's matmuls (add_block_projection, transformer_onednn.hpp) and opmeter's AMX
// GEMM (run_block_projection), read that one table.
#include <cstddef>
#include <functional>

#include "opmeter/op_spec.hpp"
#include "ops/tensor/amx_projection.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::transformer {

enum BlockProjection : std::size_t { proj_qkv, proj_o, proj_w1, proj_w2 };

// y = act(a W^T + b) [+ residual]: W and b are the inputs `w` and `bias` (TransformerBlockOp's
// indices), `in` and `out` its widths; residual null for none.
struct ProjectionStep {
  const void* a;
  std::size_t in, out, w, bias;
  void* y;
  tensor::Act act;
  const void* residual;
};

// Projection p of input set i, as an impl wires it.
using ProjectionSteps = std::function<ProjectionStep(BlockProjection p, std::size_t i)>;

// The step on the AMX GEMM, its weights and bias from the input set's tensors.
inline void run_block_projection(tensor::AmxProjection& amx, const ProjectionStep& st, const HostTensors& in) {
  amx.run(st.a, in[st.w].data(), in[st.bias].as<float>(), st.y, st.in, st.out, st.act, st.residual);
}

}  // namespace opmeter::transformer
