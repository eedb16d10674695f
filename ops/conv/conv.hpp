#pragma once
// conv2d, NCHW: y = act(BN(conv(x, w) + b)), BN (inference) and act optional.
// Params: batch, channels, out_channels, image (H = W), kernel (R = S), stride, padding, groups
// (groups = channels = out_channels is depthwise), bn (0/1), act (none, relu, ...).
// Error: |y - ref| / (scaled sum of |x w| terms), as for GEMM.
#include "ops/tensor/kernels.hpp"
#include "opmeter/tensor_op.hpp"

namespace opmeter::conv {

struct Shape {
  std::size_t n, c, oc, h, r, stride, pad, groups, oh;
  bool bn;
  tensor::Act act;
  std::size_t cg() const { return c / groups; }  // input channels per group
};
Shape shape_of(const Case& c);

// Folds inference BatchNorm into the conv before it: w' = w * s, b' = (b - mean) * s + beta with
// s = gamma / sqrt(var + eps), per output channel (`per_oc` weights each).
void fold_batchnorm(const float* w, const float* b, const float* mean, const float* var, const float* gamma,
                    const float* beta, std::size_t oc, std::size_t per_oc, float* w_out, float* b_out);

class ConvOp : public tensor::TensorOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override;
  std::size_t out_cols() const override { return shape_of(case_).oh; }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;

 protected:
  static constexpr std::size_t kX = 0, kW = 1, kBias = 2, kMean = 3, kVar = 4, kGamma = 5, kBeta = 6;
};

}  // namespace opmeter::conv
