#pragma once
// The spec (OpDef::spec) of an op that takes a quantization recipe, for impls outside this binary
// (the Python worker) and for what every case records (its element types): a case with a recipe
// gets the quantized spec's inputs (Gaussian weights, drawn the same at every seed), check (the
// recipe's fp64 gate and its SQNR) and storage, one without it the plain op's, exactly as
// opmeter's own impls of the same case.
#include <memory>

#include "ops/linear/linear.hpp"
#include "ops/linear/quant/recipe.hpp"

namespace opmeter::linear {

template <class Plain, class Quantized>
class SpecByRecipe final : public OpSpec {
 public:
  void bind(const Case& c) override {
    if (recipe_of(c) != quant::kBaseline) spec_ = std::make_unique<Quantized>();
    else spec_ = std::make_unique<Plain>();
    spec_->bind(c);
  }
  std::vector<TensorDesc> inputs() const override { return spec_->inputs(); }
  TensorDesc output() const override { return spec_->output(); }
  double tolerance() const override { return spec_->tolerance(); }
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override {
    return spec_->check(in, out, seed);
  }
  bool same_in_every_set(std::size_t input) const override { return spec_->same_in_every_set(input); }
  bool kept_for_checks(std::size_t input) const override { return spec_->kept_for_checks(input); }
  std::string held_as(std::size_t input) const override { return spec_->held_as(input); }
  bool is_table(std::size_t input) const override { return spec_->is_table(input); }

 private:
  std::unique_ptr<OpSpec> spec_;
};

}  // namespace opmeter::linear
