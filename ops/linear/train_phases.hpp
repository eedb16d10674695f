#pragma once
// The phase machinery of a training step (mode=train), shared by the host (oneDNN) and CUDA steps
// of linear and transformer_block: phase=forward times the forward, phase=backward the backward
// from the forward's saved tensors, the default the whole step; every check runs the whole step,
// so that each gradient is checked whatever is timed.
#include <cstddef>
#include <cstdint>

#include "opmeter/op_spec.hpp"
#include "ops/linear/linear.hpp"

namespace opmeter::linear {

// Base: the impl's own base (HostImpl<Op>, cuda::DeviceImpl<Op>).
template <class Base>
class TrainPhases : public Base {
 public:
  Check verify(std::uint64_t seed) override {
    checking_ = true;
    Check c = Base::verify(seed);
    checking_ = false;
    checked();
    return c;
  }

 protected:
  // The phase a run computes: the case's, or the whole step while checking.
  Phase phase_now() const { return checking_ ? Phase::step : phase_of(this->case_); }
  // Whether the backward is timed alone (outside a check), from forwards saved before.
  bool backward_alone() const { return !checking_ && phase_of(this->case_) == Phase::backward; }
  // After each check (its inputs were new).
  virtual void checked() {}

 private:
  bool checking_ = false;
};

// A host step: run() is forward and backward as the phase says.
template <class Op>
class HostTrainImpl : public TrainPhases<HostImpl<Op>> {
 public:
  void run(std::size_t copy) override {
    const Phase p = this->phase_now();
    if (p != Phase::backward) forward(copy);
    if (p != Phase::forward) backward(copy);
  }

 protected:
  virtual void forward(std::size_t copy) = 0;
  virtual void backward(std::size_t copy) = 0;
  // At the end of prepare, and after each check (set 0's inputs are new): the backward timed alone
  // reads each input set's forward, run here.
  void save_forwards_for_backward() {
    if (!this->backward_alone()) return;
    for (std::size_t i = 0; i < this->copies(); ++i) forward(i);
  }
  void checked() override { save_forwards_for_backward(); }
};

}  // namespace opmeter::linear
