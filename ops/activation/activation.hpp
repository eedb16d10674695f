#pragma once
// Activation ops, one per function: y = f(x) elementwise over batch x seq x hidden.
// relu, relu6 (clip 0..6), leaky_relu (slope 0.01), gelu (erf form), gelu_tanh, silu (swish),
// sigmoid, hardswish. Work: nominal flops per element (a transcendental counts as one), bytes =
// x read + y written. Error: |y - ref| / (|ref| + 1).
#include "ops/tensor/kernels.hpp"
#include "opmeter/tensor_op.hpp"

namespace opmeter::activation {

double reference(tensor::Act a, double x);  // fp64
double derivative(tensor::Act a, double x);  // d reference / dx in fp64 (a kink's right side)
// The sum of the magnitudes of the terms a layer adds or subtracts to compute derivative(a, x)
// (GELU's Phi(x) = (1 + erf) / 2 and x phi(x)): what its rounding is relative to. Where the terms
// cancel (GELU's tail: derivative 1e-13, terms near 1) a correct layer's derivative may be off
// by far more than its own relative precision.
double derivative_magnitude(tensor::Act a, double x);
double flops_per_element(tensor::Act a);

class ActivationOp : public tensor::TensorOp {
 public:
  explicit ActivationOp(tensor::Act a) : act_(a) {}
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override { return tensor::rows_of(case_); }
  std::size_t out_cols() const override { return tensor::hidden_of(case_); }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override { return 64 * 0x1p-24; }

 protected:
  tensor::Act act_;
};

}  // namespace opmeter::activation
