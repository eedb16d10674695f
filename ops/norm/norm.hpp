#pragma once
// Normalization ops over batch x seq x hidden (rows = batch * seq, normalized along hidden):
//   layernorm  y = (x - mean) / sqrt(var + eps) * gamma + beta      (affine, eps 1e-5)
//   rmsnorm    y = x / sqrt(mean(x^2) + eps) * gamma
//   batchnorm  inference, channels = hidden: y = (x - mean_c) / sqrt(var_c + eps) * gamma_c + beta_c
//   softmax    y = exp(x - max) / sum exp(x - max) along hidden
// Error: |y - ref| / (|each term of the affine output| + 1), softmax: / (ref + 1/hidden), with
// fp16 storage / (ref + max(1/hidden, 2^-14)) (below 2^-14 fp16 is subnormal: absolute rounding).
#include "opmeter/tensor_op.hpp"

namespace opmeter::norm {

enum class Kind { layernorm, rmsnorm, batchnorm, softmax };

class NormOp : public tensor::TensorOp {
 public:
  explicit NormOp(Kind k) : kind_(k) {}
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override { return tensor::rows_of(case_); }
  std::size_t out_cols() const override { return tensor::hidden_of(case_); }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override { return 4.0 * double(out_cols()); }

 protected:
  // Inputs by position: x first; then gamma, beta (layernorm); gamma (rmsnorm);
  // mean, var, gamma, beta (batchnorm).
  Kind kind_;
};

}  // namespace opmeter::norm
