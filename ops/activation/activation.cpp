// The activation ops, their fp64 reference and opmeter's kernel.
#include "ops/activation/activation.hpp"

#include <cmath>

#include <fmt/format.h>

namespace opmeter::activation {
using tensor::Act;

double reference(Act a, double x) {
  switch (a) {
    case Act::none: return x;
    case Act::relu: return x > 0 ? x : 0;
    case Act::relu6: return std::clamp(x, 0.0, 6.0);
    case Act::leaky_relu: return x > 0 ? x : double(tensor::kLeakySlope) * x;
    case Act::gelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Act::gelu_tanh: {
      double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1 + std::tanh(u));
    }
    case Act::silu: return x / (1 + std::exp(-x));
    case Act::sigmoid: return 1 / (1 + std::exp(-x));
    case Act::hardswish: return x * std::clamp(x + 3, 0.0, 6.0) / 6;
  }
  return x;
}

double derivative(Act a, double x) {
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  switch (a) {
    case Act::none: return 1;
    case Act::relu: return x > 0 ? 1 : 0;
    case Act::relu6: return x > 0 && x < 6 ? 1 : 0;
    case Act::leaky_relu: return x > 0 ? 1 : double(tensor::kLeakySlope);
    case Act::gelu: return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    case Act::gelu_tanh: {
      const double c = std::sqrt(2.0 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    }
    case Act::silu: return sigmoid(x) * (1 + x * (1 - sigmoid(x)));
    case Act::sigmoid: return sigmoid(x) * (1 - sigmoid(x));
    case Act::hardswish: return x < -3 ? 0 : x > 3 ? 1 : (2 * x + 3) / 6;
  }
  return 1;
}

double derivative_magnitude(Act a, double x) {
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  const double ax = std::fabs(x);
  switch (a) {
    case Act::gelu:  // (1 + erf(x / sqrt 2)) / 2 + x phi(x)
      return 0.5 * (1 + std::fabs(std::erf(x / std::sqrt(2.0)))) + ax * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    case Act::gelu_tanh: {  // (1 + t) / 2 + x (1 - t^2) c (1 + 3 k x^2) / 2
      const double c = std::sqrt(2.0 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
      return 0.5 * (1 + std::fabs(t)) + 0.5 * ax * (1 + t * t) * c * (1 + 3 * 0.044715 * x * x);
    }
    case Act::silu: return sigmoid(x) * (1 + ax * (1 + sigmoid(x)));  // s (1 + x (1 - s))
    case Act::sigmoid: return sigmoid(x) * (1 + sigmoid(x));          // s (1 - s)
    case Act::hardswish: return ax < 3 ? (2 * ax + 3) / 6 : std::fabs(derivative(a, x));
    default: return std::fabs(derivative(a, x));
  }
}

double flops_per_element(Act a) {
  switch (a) {
    case Act::none: return 0;
    case Act::relu: return 1;
    case Act::relu6: case Act::leaky_relu: return 2;
    case Act::sigmoid: return 3;
    case Act::silu: return 4;
    case Act::gelu:
    case Act::hardswish: return 5;  // hardswish: x * relu6(x + 3) / 6
    case Act::gelu_tanh: return 9;
  }
  return 1;
}

std::vector<TensorDesc> ActivationOp::inputs() const {
  // -8..8 covers every branch: relu6's clip, hardswish's ramp, GELU's tail.
  return {{"x", act(), out_rows() * out_cols(), -8, 8}};
}

void ActivationOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  std::size_t cols = out_cols();
  for (std::size_t c = 0; c < cols; ++c) {
    ref[c] = reference(act_, in[0][row * cols + c]);
    mag[c] = std::fabs(ref[c]) + 1;
  }
}

namespace {

class OpmeterActivation : public HostImpl<ActivationOp> {
 public:
  using HostImpl::HostImpl;
  void run(std::size_t copy) override {
    tensor::kernels().act(act_, bf16(), in(copy, 0), out(copy), out_rows() * out_cols());
  }
  std::map<std::string, std::string> details() const override { return {{"isa", tensor::kernels().isa}}; }
};

const bool registered = [] {
  for (Act a : tensor::all_acts()) {
    std::string name(tensor::to_string(a));
    OpDef op = tensor::rows_op(name, fmt::format("y = {}(x) elementwise", name), [a](const Case& c) {
      double n = double(tensor::rows_of(c)) * double(tensor::hidden_of(c));
      double bytes = n * double(size_of(c.dtype));
      return Work{n * flops_per_element(a), bytes, bytes};
    });
    op.check_shapes = tensor::row_check_shapes(op.example);
    Registry::global().add(std::move(op));
    tensor::register_reference<ActivationOp>(name, {DType::fp32, DType::bf16},
                               [](const Case& c) { return 20.0 * double(tensor::rows_of(c) * tensor::hidden_of(c)); }, a);
    Registry::global().add(ImplDef{
        .op = name,
        .impl = "opmeter",
        .preference = ImplDef::own_kernel,
        .summary = "opmeter's vectorized one-pass kernel",
        .dtypes = {DType::fp32, DType::bf16},
        .make = [a] { return std::make_unique<OpmeterActivation>(a); },
    });
  }
  return true;
}();

}  // namespace
}  // namespace opmeter::activation
