// The linear ops' spec (OpDef::spec) for impls outside this binary (the Python worker): a case
// with `quant` gets QuantLinearOp's inputs (Gaussian W) and check (the recipe's fp64 gate and its
// SQNR), one without it LinearOp's, exactly as opmeter's own impls of the same case.
#include <memory>

#include "ops/linear/quant_linear.hpp"

namespace opmeter::linear {
namespace {

class LinearSpecByRecipe final : public OpSpec {
 public:
  void bind(const Case& c) override {
    if (c.has(kQuant) && recipe_of(c) != quant::kBaseline)
      spec_ = std::make_unique<QuantLinearOp>();
    else
      spec_ = std::make_unique<LinearOp>();
    spec_->bind(c);
  }
  std::vector<TensorDesc> inputs() const override { return spec_->inputs(); }
  TensorDesc output() const override { return spec_->output(); }
  double tolerance() const override { return spec_->tolerance(); }
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override {
    return spec_->check(in, out, seed);
  }

 private:
  std::unique_ptr<OpSpec> spec_;
};

}  // namespace

std::unique_ptr<OpSpec> make_linear_spec() { return std::make_unique<LinearSpecByRecipe>(); }

}  // namespace opmeter::linear
