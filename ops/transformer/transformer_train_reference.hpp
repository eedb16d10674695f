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

// fp64 operations of TrainReference for a shape (its GEMMs with their magnitudes, attention's).
double train_reference_cost(const Shape& s);
// The gradients' tolerance on |got - ref| / mag for a case's dtype.
double train_gradient_tolerance(const Case& c);

class TrainReference {
 public:
  // in: the block's inputs and dy (index kBlockInputs); `act`: the stored activations' type;
  // `tolerance`: the check's, `forward_tolerance` the forward's (an act' change within the
  // forward's error of u counts over the tolerance).
  TrainReference(const Shape& s, const HostTensors& in, Elem act, double tolerance, double forward_tolerance);
  // Element i of the gradients laid out as TrainLayout from its first gradient (dx).
  double value(std::size_t i) const { return value_[i]; }
  double mag(std::size_t i) const { return mag_[i]; }

 private:
  std::vector<double> value_, mag_;
};

}  // namespace opmeter::transformer
