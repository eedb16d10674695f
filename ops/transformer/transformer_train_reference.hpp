#pragma once
// transformer_block's forward and backward in fp64 over every row (the training check's oracle):
// the gradients of every input, each with its magnitude, the sum of |terms| that made it carried
// back through the chain (|dA| = |dZ| |W|, |dW| = |dZ|^T |A|, softmax's and LayerNorm's backward
// on magnitudes), so that |got - ref| / mag is a rounding error's size relative to the unit
// roundoff. The forward's values are taken as exact except where a derivative moves with them:
// act'(u) near a kink or a steep stretch (as linear's check) and the softmax's probabilities,
// whose magnitude carries the scores' own (P (1 + scale sum |q||k|)).
#include <vector>

#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

// Rows of the four weight gradients (dW = dZ^T A) the reference computes; empty: all of them.
// (Every other gradient needs the whole chain: attention mixes a sequence's rows and LayerNorm's
// dgamma, dbeta sum over all rows, so only the weight gradients' own products can be sampled.)
struct WeightRows {
  std::vector<std::size_t> wqkv, wo, w1, w2;
  bool empty() const { return wqkv.empty() && wo.empty() && w1.empty() && w2.empty(); }
};

// fp64 operations of TrainReference for a shape (its GEMMs with their magnitudes, attention's);
// sampled_rows > 0: with each weight gradient on that many rows.
double train_reference_cost(const Shape& s, std::size_t sampled_rows = 0);
// The gradients' tolerance on |got - ref| / mag for a case's dtype.
double train_gradient_tolerance(const Case& c);

class TrainReference {
 public:
  // in: the block's inputs and dy (index kBlockInputs); `act`: the stored activations' type;
  // `tolerance`: the check's, `forward_tolerance` the forward's (an act' change within the
  // forward's error of u counts over the tolerance).
  // `rows`: the weight gradients' rows to compute (the others NaN), all where empty.
  TrainReference(const Shape& s, const HostTensors& in, Elem act, double tolerance, double forward_tolerance,
                 const WeightRows& rows = {});
  // Element i of the gradients laid out as TrainLayout from its first gradient (dx); NaN where
  // not computed (a weight gradient's row outside WeightRows).
  double value(std::size_t i) const { return value_[i]; }
  double mag(std::size_t i) const { return mag_[i]; }

 private:
  std::vector<double> value_, mag_;
};

}  // namespace opmeter::transformer
