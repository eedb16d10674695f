#pragma once
// Linear layers (the seeds' model types), rows = batch * seq:
//   linear           y = act(x W^T + b)              params batch, seq, hidden, out, act
//   ln_linear_<act>  y = act(LayerNorm(x) W^T + b)   params batch, seq, hidden, out
// x: rows x hidden, W: out x hidden, b: out (fp32), gamma/beta: hidden (fp32), y: rows x out.
// Error: |y - ref| / (sum_k |xhat_k W_jk| + |b_j|), as for GEMM. Fusion: the unfused sequence
// writes each intermediate (LayerNorm output, x W^T, + b) to memory and reads it back.
#include <optional>

#include "opmeter/tensor_op.hpp"
#include "ops/linear/quant_gpu_plan.hpp"
#include "ops/tensor/kernels.hpp"

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

// Optional parameters (see OptionalParam): `quant=RECIPE` (ops/linear/quant/recipe.hpp) and `mode=train`.
inline constexpr const char* kQuant = "quant";
inline constexpr const char* kMode = "mode";
inline constexpr const char* kTrain = "train";
std::string recipe_of(const Case& c);  // "baseline" where the case carries no quant
bool training(const Case& c);

// Training cases (mode=train) only. `phase`: which part of the step a case times: step (forward
// then backward, the default), forward (the forward that keeps what backward needs) or backward
// (from the forward's saved tensors). A report joins the three into fwd / bwd / total.
inline constexpr const char* kPhase = "phase";
enum class Phase { step, forward, backward };
Phase phase_of(const Case& c);

// ksplit = auto | N: how many ways cuda_quant's weight-only kernel splits K (auto: its own choice,
// quant_gpu_decode.hpp); inference with a weight-only recipe only. N must give every split a
// chunk of K, else the case is skipped saying which N do.
inline constexpr const char* kKsplit = "ksplit";
int ksplit_of(const Case& c);  // 0 for auto

// operand = auto | a | b: which mma operand cuda_quant's weight-only kernel takes the weights as
// (auto: A for int4 and int8 at rows <= 8, else B; gpu_pack::weight_operand), so that both forms
// of the decode kernel can be timed side by side; inference with a weight-only recipe only.
inline constexpr const char* kOperand = "operand";
std::optional<gpu_pack::Operand> operand_of(const Case& c);  // none for auto

// float8 training knobs (torchao's Float8LinearConfig), for quant=float8dq-* with mode=train:
//   scaling_input, scaling_weight, scaling_grad = dynamic | disabled   (disabled: the tensor is
//       cast to fp8 with scale 1, no amax pass)
//   granularity = tensorwise | rowwise   (absent: the recipe's own; given, it wins over it)
//   fast_accum  = 1 | 0                  (fp8 GEMMs' fast accumulation, cuBLASLt's FAST_ACCUM)
// e4m3 forward, e5m2 gradients. A case of another recipe or mode carrying one is rejected.
inline constexpr const char* kScalingInput = "scaling_input";
inline constexpr const char* kScalingWeight = "scaling_weight";
inline constexpr const char* kScalingGrad = "scaling_grad";
inline constexpr const char* kGranularity = "granularity";
inline constexpr const char* kFastAccum = "fast_accum";
struct Float8Knobs {
  bool scale_input = true, scale_weight = true, scale_grad = true;
  bool rowwise = false;
  bool fast_accum = true;
};
Float8Knobs float8_knobs(const Case& c);
// Bytes of the layer's weights as the case's recipe stores them (codes, scales, zeros).
double quantized_weight_bytes(const Case& c);

// A training case's output: one tensor in the activations' type holding, one after another,
// y (rows x out), dx (rows x hidden), dW (out x hidden), db (out) and, with LayerNorm, dgamma and
// dbeta (hidden each). Offsets in elements.
struct TrainLayout {
  std::size_t y = 0, dx = 0, dw = 0, db = 0, dgamma = 0, dbeta = 0, total = 0;
};
TrainLayout train_layout(const Shape& s);

// The ops' spec for impls outside this binary: QuantLinearOp's where the case carries `quant`,
// else LinearOp's (linear_spec.cpp).
std::unique_ptr<OpSpec> make_linear_spec();

class LinearOp : public tensor::TensorOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  // Training cases (mode=train): an extra input dy (rows x out, the loss's gradient of y, in the
  // activations' type), the output laid out as TrainLayout, and a check of y and every gradient
  // against fp64 on sampled rows (y, dx) and columns (dW, db), dgamma and dbeta whole within the
  // check's budget (linear_train_check.cpp).
  TensorDesc output() const override;
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;
  std::size_t dy_index() const { return shape_of(case_).layernorm ? 5 : 3; }
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
