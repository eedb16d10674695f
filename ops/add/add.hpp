#pragma once
// add: C = A + B elementwise, the residual connection of a transformer block.
// Params batch, seq, hidden (the activation shape, as layernorm and gelu: configs sweep it on the
// same axes); n = batch * seq * hidden elements.
// dtypes: fp32, bf16 (CPU and CUDA), fp16 (CUDA); the sum is formed in fp32 and rounded once.
// Work: 1 flop per element; bytes = A and B read, C written, in the dtype.
// Error metric: |c - (a + b)| / (|a| + |b|) per element, every element checked; one rounding
// in the storage type is below its unit roundoff.
#include "opmeter/op_spec.hpp"

namespace opmeter::add {

std::size_t elements(const Case& c);
Work work(const Case& c);

// The spec every add impl shares, CPU or device.
class AddSpec : public OpSpec {
 public:
  void bind(const Case& c) override;
  std::vector<TensorDesc> inputs() const override { return {{"A", elem_, n_}, {"B", elem_, n_}}; }
  TensorDesc output() const override { return {"C", elem_, n_}; }
  double tolerance() const override;
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;

 protected:
  static constexpr std::size_t kA = 0, kB = 1;
  Case case_;
  Elem elem_ = Elem::f32;  // fp32, fp16 or bf16 storage
  std::size_t n_ = 0;
};

}  // namespace opmeter::add
