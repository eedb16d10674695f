#pragma once
// A linear layer (linear, ln_linear_<act>) run by a quantization recipe (case parameter `quant`,
// ops/linear/quant/recipe.hpp). Same inputs as LinearOp, except that W is drawn from a Gaussian (its
// tails are what int4 scales must cover); the impl quantizes W once at setup (quantized_weights)
// and, for dynamic recipes, the activations on every call.
//
// Two figures per check:
//   the gate: the output against the SAME recipe computed exactly in fp64 (the quantized weights
//     read back exactly, the activations quantized as the recipe says), in LinearOp's error
//     metric and tolerance: a wrong kernel fails;
//   the cost: metrics `sqnr_db` and `max_abs_error` of what the recipe changes, the product
//     x W^T before bias and activation (as torchao measures it, on bias-free layers): the
//     recipe's product (product_row) against the unquantized one, in fp64 over the checked rows.
//     Neither the bias (an arbitrary input that would add its power to the signal) nor the
//     activation enters; the kernel's own rounding is the gate's business.
#include <memory>
#include <mutex>

#include "ops/linear/linear.hpp"
#include "ops/linear/quant/quantize.hpp"

namespace opmeter::linear {

// A content hash of inputs `which` of `in`: identical tensors share their quantization.
std::uint64_t inputs_hash(const HostTensors& in, std::initializer_list<std::size_t> which);

class QuantLinearOp : public LinearOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  // W: quantized once per case, not once per input set (the checks vary x and the bias).
  bool same_in_every_set(std::size_t input) const override { return input == kW; }
  bool kept_for_checks(std::size_t input) const override { return input == kW; }
  std::string held_as(std::size_t input) const override;
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;
  // LinearOp's, plus for dynamic recipes a couple of activation codes rounded the other way (a
  // kernel's fp32 LayerNorm may land on the other side of a code boundary than fp64's).
  double tolerance() const override;
  // The recipe's output row in fp64 (the gate's reference), with each element's scale.
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;

  quant::Recipe recipe() const;
  // The scales' stored type: the activations' 16-bit type, else f32.
  Elem scale_elem() const { return act() == Elem::f32 ? Elem::f32 : act(); }
  // W of `in` quantized by the recipe; computed once per distinct W (a content hash) and shared
  // by the impl's setup and every check.
  const quant::QuantizedWeights& quantized_weights(const HostTensors& in) const;
  // The rows of the LayerNorm'd (or plain) activations, in fp64, as the layer's GEMM reads them;
  // and for dynamic recipes their quantized values (the per-tensor fp8 scale spans all rows).
  std::vector<double> activation_row(const HostTensors& in, std::size_t row) const;
  // Row `row` of x W^T in fp64, before bias and activation: `exact` from the unquantized (but
  // LayerNorm'd) activations and weights, `quantized` as the recipe computes it (activation_row
  // times the quantized weights read back exactly). The SQNR's signal and signal + noise.
  void product_row(const HostTensors& in, std::size_t row, double* exact, double* quantized) const;

 private:
  mutable std::mutex mutex_;
  mutable std::uint64_t weights_hash_ = 0;
  mutable std::shared_ptr<quant::QuantizedWeights> weights_;
  mutable std::uint64_t tensor_scale_hash_ = 0;
  mutable float tensor_scale_ = 1;  // float8dq-tensor: the activations' scale over all rows
  mutable std::vector<std::uint8_t> tensor_codes_;  // and their codes
};

}  // namespace opmeter::linear
