#pragma once
// embedding: out[r, :] = table[ids[r], :] for r < batch * seq, a token embedding lookup.
// Params: batch, seq, hidden, vocab. Inputs: ids (int32, drawn uniformly in [0, vocab) by the
// case's random inputs) and table (vocab x hidden, in the case's dtype); output rows x hidden.
// Cold: each input set has its own ids, and sets share copies of a table too large to copy for
// each (the runner's plan_cold says how many, and what part of the rows may still be cached).
// dtypes: fp32, bf16 (CPU and CUDA), fp16 (CUDA). A copy: every impl must be exact.
#include "opmeter/tensor_op.hpp"

namespace opmeter::embedding {

class EmbeddingOp : public tensor::TensorOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override { return tensor::rows_of(case_); }
  std::size_t out_cols() const override { return tensor::hidden_of(case_); }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override { return 0; }
  std::size_t vocab() const { return tensor::param(case_, "vocab"); }
  // A call reads only the rows its ids name: cold sets draw their own ids and may share tables.
  bool is_table(std::size_t input) const override { return input == kTable; }

 protected:
  static constexpr std::size_t kIds = 0, kTable = 1;
};

}  // namespace opmeter::embedding
