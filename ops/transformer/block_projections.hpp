#pragma once
// A transformer block's four projections as its CPU impls run them. Each impl says once, per
// input set, where each projection reads and writes (a ProjectionStep per projection), and
// BlockProjections runs that table on opmeter's AMX GEMM in bf16 where it fits (AMX-BF16; rows,
// hidden and mlp multiples of 32), else as one oneDNN matmul each (add_block_projection,
// transformer_onednn.hpp).
#include <cstddef>
#include <functional>
#include <map>
#include <string>

#include "opmeter/op_spec.hpp"
#include "ops/tensor/amx_projection.hpp"
#include "ops/tensor/kernels.hpp"
#include "ops/tensor/onednn_util.hpp"
#include "ops/transformer/transformer_block.hpp"

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
// Input k of input set i.
using InputOf = std::function<const void*(std::size_t i, std::size_t k)>;

class BlockProjections {
 public:
  // For shape s in dtype over `copies` input sets, wired by `steps`.
  void prepare(const Shape& s, DType dtype, std::size_t copies, ProjectionSteps steps, const InputOf& input);
  // Projection p of input set `copy` (in: that set's tensors).
  void run(BlockProjection p, std::size_t copy, const HostTensors& in);
  bool on_amx() const { return on_amx_; }
  // oneDNN's impl names; none on the AMX GEMM.
  std::map<std::string, std::string> onednn_details() const;

 private:
  ProjectionSteps steps_;
  bool on_amx_ = false;
  tensor::AmxProjection amx_;
  tensor::OnednnSequence seq_;  // BlockProjection's order
};

}  // namespace opmeter::transformer
