#pragma once
// A training step of linear / ln_linear_<act> (cases with mode=train, linear.hpp): forward, then
// the gradients of x, W and b (and of LayerNorm's gamma and beta) for an upstream gradient dy.
//   forward   xhat = x or LayerNorm(x) (gamma, beta), z = xhat W^T + b, y = act(z)
//   backward  dz = dy * act'(z), dxhat = dz W, dW = dz^T xhat, db = sum over rows of dz,
//             dx = dxhat or LayerNorm's backward of it, dgamma = sum dxhat * xn, dbeta = sum dxhat
// Inputs: LinearOp's, then dy (rows x out, the case's dtype). The output is ONE fp32 tensor that
// packs every result one after another (TrainLayout): y | dx | dW | db [| dgamma | dbeta].
// 16-bit impls write their values widened to fp32 (dW, db and the LayerNorm gradients are fp32
// accumulations anyway).
//
// The check: every element written, then against the fp64 reference: sampled rows of y and dx
// (each row's z, dz and dxhat in full), sampled columns of dW and db (each column's dz over all
// rows), and dgamma / dbeta in full where all rows are checked, else through the identities
// dbeta = db W and dgamma_k = sum_j W_jk (dW_jk - beta_k db_j) / gamma_k on the impl's own
// (sample-checked) dW and db. Each error is scaled by its sum of |terms|, where |dz| counts
// act''s possible change over the error the forward's z may carry (derivative_slack).
// float8 training (quant=float8dq-*): a tolerance derived from e4m3's precision (3 mantissa
// bits: each operand rounded by up to 2^-4 relative; three roundings per product plus
// the 16-bit stages), not a bit-exact model of the recipe.
#include "ops/linear/linear.hpp"

namespace opmeter::linear {

// Offsets (in fp32 elements) of each result in the packed output.
struct TrainLayout {
  std::size_t y = 0, dx = 0, dw = 0, db = 0, dgamma = 0, dbeta = 0, total = 0;
};
TrainLayout train_layout(const Shape& s);

class TrainLinearOp : public LinearOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  TensorDesc output() const override { return {"out", Elem::f32, train_layout(shape_of(case_)).total}; }
  Elem out_elem() const override { return Elem::f32; }
  double tolerance() const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;

  std::size_t dy_index() const { return shape_of(case_).layernorm ? kBeta + 1 : kBias + 1; }
  // Whether the case trains with fp8 GEMMs (quant=float8dq-tensor / float8dq-row).
  bool fp8() const;
  // Tolerance of fp8 training: relative to the sum of |terms|, as every other.
  static constexpr double kFp8Tolerance = 0.25;
};

// The whole training step in fp64 loops (small cases: tests use it as an oracle), written into
// `out` packed as TrainLayout.
void reference_train_step(const TrainLinearOp& op, const HostTensors& in, HostTensor& out);

}  // namespace opmeter::linear
