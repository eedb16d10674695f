#pragma once
// transformer_block: a pre-LN transformer block over x (batch x seq x hidden, rows = batch * seq):
//   h = x + Attn(LN1(x)),  y = h + W2 act(W1 LN2(h) + b1) + b2
// Attn: qkv = LN1(x) Wqkv^T + bqkv (q | k | v, each hidden wide, head i at columns i*d..i*d+d-1 of
// its part, d = hidden / heads), per (batch, head) o = softmax(q k^T / sqrt(d) [+ causal mask]) v,
// heads concatenated, then o Wo^T + bo. LayerNorms affine with eps 1e-5; act gelu (erf) by default.
// Inputs in order (weights stored out x in, in the case's dtype like linear's; vectors fp32):
//   x, ln1_gamma, ln1_beta, wqkv (3h x h), bqkv, wo (h x h), bo, ln2_gamma, ln2_beta,
//   w1 (mlp x h), b1, w2 (h x mlp), b2.  Output y: rows x hidden.
// Weights and biases are drawn in +-1/sqrt(fan_in) (PyTorch's nn.Linear init) so values stay O(1).
//
// Error: |y - ref| / mag, where mag carries each stage's own scale (sum of |terms| of its sums,
// as for linear / attention) plus its inputs' scales propagated through the stage to first order
// (root-sum-square through weighted sums: independent rounding errors add that way).
// A row depends on its whole sequence (keys and values), so the reference is computed per
// sequence (reference_rows) and the check samples a few rows of one or two sequences.
#include "ops/tensor/kernels.hpp"
#include "opmeter/tensor_op.hpp"

namespace opmeter::transformer {

struct Shape {
  std::size_t batch, seq, hidden, heads, mlp;
  tensor::Act act;
  bool causal;
  std::size_t rows() const { return batch * seq; }
  std::size_t head_dim() const { return hidden / heads; }
  float scale() const;
  // Elements of the four weight matrices: Wqkv 3h x h, Wo h x h, W1 mlp x h, W2 h x mlp.
  double weight_elems() const { return double(hidden) * double(4 * hidden + 2 * mlp); }
};
Shape shape_of(const Case& c);  // mlp=0 means 4 * hidden
Work fused_work(const Case& c);
Work unfused_work(const Case& c);

class TransformerBlockOp : public tensor::TensorOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  // mode=train (transformer_train.hpp): an extra input dy, the output laid out as TrainLayout, and
  // a check of y and every gradient against fp64 (transformer_train_check.cpp).
  TensorDesc output() const override;
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;
  // The training check with the fp64 backward whole up to whole_budget operations, its weight
  // gradients sampled above (check passes the check's own budget; tests a smaller one).
  Check check_train(const HostTensors& in, const HostTensor& out, std::uint64_t seed, double whole_budget) const;
  std::size_t out_rows() const override { return shape_of(case_).rows(); }
  std::size_t out_cols() const override { return shape_of(case_).hidden; }
  // One row alone (recomputes its sequence's keys and values: use reference_rows for many).
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  void reference_rows(const HostTensors& in, const std::vector<std::size_t>& rows, const RowSink& each) const override;
  std::vector<std::size_t> check_rows(std::uint64_t seed) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;
  double tolerance() const override;

 protected:
  // The four weight matrices (kWqkv, kWo, kW1, kW2) in fp64 as the reference multiplies by them:
  // the inputs; a quantization recipe's stored values in QuantTransformerBlockOp.
  virtual std::vector<double> weight_values(const HostTensors& in, std::size_t which) const;
  // reference_rows with those weights (stored_weights) or with the inputs' own.
  void reference_rows_of(const HostTensors& in, const std::vector<std::size_t>& rows, const RowSink& each,
                         bool stored_weights) const;

  static constexpr std::size_t kX = 0, kLn1Gamma = 1, kLn1Beta = 2, kWqkv = 3, kBqkv = 4, kWo = 5, kBo = 6,
                               kLn2Gamma = 7, kLn2Beta = 8, kW1 = 9, kB1 = 10, kW2 = 11, kB2 = 12, kDy = 13;
};

}  // namespace opmeter::transformer
