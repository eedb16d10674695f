#pragma once
// Activation ops, one per function: y = f(x) elementwise over batch x seq x hidden.
// relu, relu6 (clip 0..6), leaky_relu (slope 0.01), gelu (erf form), gelu_tanh, silu (swish),
// sigmoid, hardswish. Work: nominal flops per element (a transcendental counts as one), bytes =
// x read + y written. Error: |y - ref| / (|ref| + 1).
#include <cmath>

#include "ops/tensor/kernels.hpp"
#include "opmeter/tensor_op.hpp"

namespace opmeter::activation {

double reference(tensor::Act a, double x);  // fp64
double flops_per_element(tensor::Act a);

// act'(x), the slope the backward pass multiplies gradients by; T is double for the fp64
// reference and float for CPU training loops (the one-sided slope 1 / 0 at a kink, as PyTorch).
template <class T>
T derivative(tensor::Act a, T x) {
  using std::erf, std::exp, std::sqrt, std::tanh;
  switch (a) {
    case tensor::Act::none: return T(1);
    case tensor::Act::relu: return x > 0 ? T(1) : T(0);
    case tensor::Act::relu6: return x > 0 && x < 6 ? T(1) : T(0);
    case tensor::Act::leaky_relu: return x > 0 ? T(1) : T(tensor::kLeakySlope);
    case tensor::Act::gelu: {  // Phi(x) + x phi(x)
      const T phi = exp(-x * x / 2) * T(0.3989422804014327);
      return T(0.5) * (1 + erf(x * T(0.7071067811865476))) + x * phi;
    }
    case tensor::Act::gelu_tanh: {
      const T k = T(0.7978845608028654), u = k * (x + T(0.044715) * x * x * x), t = tanh(u);
      return T(0.5) * (1 + t) + T(0.5) * x * (1 - t * t) * k * (1 + 3 * T(0.044715) * x * x);
    }
    case tensor::Act::silu: {
      const T s = 1 / (1 + exp(-x));
      return s * (1 + x * (1 - s));
    }
    case tensor::Act::sigmoid: {
      const T s = 1 / (1 + exp(-x));
      return s * (1 - s);
    }
    case tensor::Act::hardswish: return x < -3 ? T(0) : x > 3 ? T(1) : (2 * x + 3) / 6;
  }
  return T(1);
}
// How much act' can differ from act'(x) anywhere within `err` of x: the largest |act''| times
// err, plus the jump of any kink within err (relu's at 0, hardswish's at +-3). A check scales a
// gradient's error by it where z itself is only known to within err.
double derivative_slack(tensor::Act a, double x, double err);

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
