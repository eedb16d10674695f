#pragma once
// Linear layers (the seeds' model types), rows = batch * seq:
//   linear           y = act(x W^T + b)              params batch, seq, hidden, out, act
//   ln_linear_<act>  y = act(LayerNorm(x) W^T + b)   params batch, seq, hidden, out
// x: rows x hidden, W: out x hidden, b: out (fp32), gamma/beta: hidden (fp32), y: rows x out.
// Error: |y - ref| / (sum_k |xhat_k W_jk| + |b_j|), as for GEMM. Fusion: the unfused sequence
// writes each intermediate (LayerNorm output, x W^T, + b) to memory and reads it back.
#include "ops/tensor/kernels.hpp"
#include "opmeter/tensor_op.hpp"

namespace opmeter::linear {

struct Shape {
  std::size_t rows, hidden, out;
  tensor::Act act;
  bool layernorm;
};
Shape shape_of(const Case& c);
// The linear-layer ops every impl of them registers for: linear and each ln_linear_<act>.
std::vector<std::string> linear_ops();
// A case's work: one forward call, or with mode=train one training step (forward, then the
// gradients of x, W and b, and of LayerNorm's gamma and beta). Weight bytes are the recipe's
// stored bytes (quantized_weight_bytes) where the case carries `quant`.
Work fused_work(const Case& c);
Work unfused_work(const Case& c);

// Optional parameters (see OptionalParam): `quant=RECIPE` (src/quant/recipe.hpp) and `mode=train`.
inline constexpr const char* kQuant = "quant";
inline constexpr const char* kMode = "mode";
inline constexpr const char* kTrain = "train";
std::string recipe_of(const Case& c);  // "baseline" where the case carries no quant
bool training(const Case& c);
// Bytes of the layer's weights as the case's recipe stores them (codes, scales, zeros).
double quantized_weight_bytes(const Case& c);

class LinearOp : public tensor::TensorOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override { return shape_of(case_).rows; }
  std::size_t out_cols() const override { return shape_of(case_).out; }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;

 protected:
  // Inputs by position.
  static constexpr std::size_t kX = 0, kW = 1, kBias = 2, kGamma = 3, kBeta = 4;
};

}  // namespace opmeter::linear
