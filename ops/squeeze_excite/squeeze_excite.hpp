#pragma once
// squeeze_excite, NCHW: per (sample n, channel c)
//   s[c] = mean over H*W of x[n, c];  a = act(W1 s + b1);  g = gate(W2 a + b2);  y[n, c] = x[n, c] * g[c]
// with W1 reduced x channels, W2 channels x reduced; act relu | silu, gate sigmoid | hardsigmoid
// (relu6(z + 3) / 6, PyTorch's). x and y are in the case's dtype; W1, b1, W2, b2 are fp32, as the
// norms keep gamma in fp32 (the torch impl converts them to x's dtype, as model.to() does).
// Output rows are the (n, c) planes, H*W values each.
// Error: |y - ref| / (|x| (g + 1/4 |terms of W2 a + b2|)): a gate's slope is at most 1/4, so an
// error in the FCs moves y by at most that share of their terms' magnitude.
#include "opmeter/tensor_op.hpp"

namespace opmeter::squeeze_excite {

enum class Act { relu, silu };
enum class Gate { sigmoid, hardsigmoid };

struct Shape {
  std::size_t n, c, hw, r;
  Act act;
  Gate gate;
  std::size_t planes() const { return n * c; }
};
Shape shape_of(const Case& c);

// The gate and activation in fp64 (reference) and fp32 (kernels), PyTorch's definitions.
double act_ref(Act a, double z);
double gate_ref(Gate g, double z);

class SqueezeExciteOp : public tensor::TensorOp {
 public:
  static constexpr std::size_t kX = 0, kW1 = 1, kB1 = 2, kW2 = 3, kB2 = 4;
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override { return shape_of(case_).planes(); }
  std::size_t out_cols() const override { return shape_of(case_).hw; }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  // The gates of each sample the rows need, once; then the rows.
  void reference_rows(const HostTensors& in, const std::vector<std::size_t>& rows, const RowSink& each) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;

 private:
  // Gate of every channel of sample n and the magnitude of its error scale, fp64.
  void sample_gates(const HostTensors& in, std::size_t n, double* g, double* zmag) const;
  void row_from_gate(const HostTensors& in, std::size_t row, double g, double zmag, double* ref, double* mag) const;
};

}  // namespace opmeter::squeeze_excite
