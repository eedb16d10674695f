#pragma once
// transformer_block run by a weight-only quantization recipe (case parameter `quant`,
// ops/linear/quant/recipe.hpp) on its four weight matrices (Wqkv, Wo, W1, W2). Same inputs as
// TransformerBlockOp, except that the weights are Gaussian (their tails are what int4 scales must
// cover), quantized once per distinct input.
//
// Two figures per check, as for a quantized linear layer (ops/linear/quant_linear.hpp):
//   the gate: the output against the block computed in fp64 with the recipe's stored weights,
//     in TransformerBlockOp's error metric and tolerance: a wrong kernel fails;
//   the cost: metrics `sqnr_db` and `max_abs_error` against the unquantized block, over the
//     checked rows. SQNR is of the block's update y - x (attention and MLP), what the recipe
//     changes: the residual input x passes through exactly and would add its power to the signal.
#include <memory>
#include <mutex>

#include "ops/transformer/transformer_block.hpp"
#include "ops/linear/quant/quantize.hpp"

namespace opmeter::transformer {

// The recipe of a case's `quant`, and whether the case has one (not baseline).
bool quantized(const Case& c);
quant::Recipe recipe_of_case(const Case& c);
// Why a recipe cannot quantize this block (dynamic activations, a group that does not divide
// hidden or mlp); empty when it can.
std::string recipe_problem(const Case& c);
// Bytes of the four weight matrices as the recipe stores them (codes, scales, zeros).
double quantized_weight_bytes(const Case& c);

class QuantTransformerBlockOp : public TransformerBlockOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  // The four weight matrices: quantized once per case, not once per input set.
  bool same_in_every_set(std::size_t input) const override {
    return input == kWqkv || input == kWo || input == kW1 || input == kW2;
  }
  bool kept_for_checks(std::size_t input) const override { return same_in_every_set(input); }
  std::string held_as(std::size_t input) const override {
    return same_in_every_set(input) ? quant::weights_held_as(recipe_of_case(case_)) : "";
  }
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;
  // Weight matrix `which` (kWqkv, kWo, kW1, kW2) quantized by the recipe, per distinct content.
  const quant::QuantizedWeights& quantized_weights(const HostTensors& in, std::size_t which) const;
  Elem scale_elem() const { return act() == Elem::f32 ? Elem::f32 : act(); }

  static constexpr std::size_t kWeights[4] = {kWqkv, kWo, kW1, kW2};

 protected:
  std::vector<double> weight_values(const HostTensors& in, std::size_t which) const override;

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::size_t, std::pair<std::uint64_t, std::shared_ptr<quant::QuantizedWeights>>> weights_;
};

}  // namespace opmeter::transformer
