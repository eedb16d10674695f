#pragma once
// What the CUDA training steps of the linear ops (cublaslt_train, cublaslt_fp8_train) share: the
// tensors a step keeps between its forward and backward (z and dz with an activation; LayerNorm's
// output, statistics and dxhat for ln_linear), where each operand lives, their allocation, and
// the phases (train_phases.hpp).
#include "ops/linear/cuda/act_backward_kernel.hpp"
#include "ops/linear/cuda/layernorm_train_kernel.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/train_phases.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::linear {

template <class Op>
class LinearTrainCudaBase : public TrainPhases<cuda::DeviceImpl<Op>> {
 public:
  // The case's shape and output layout, parsed once here: every launch reads them.
  void setup(const Case& c, const SetupOptions& options) override {
    shape_ = shape_of(c);
    layout_ = train_layout(shape_);
    TrainPhases<cuda::DeviceImpl<Op>>::setup(c, options);
  }

  // The step as the phase says: forward, then backward from dz = dy * act'(z) (act=none: dy) to
  // dxhat, and LayerNorm's backward from dxhat.
  void launch() override {
    const Phase p = this->phase_now();
    if (p != Phase::backward) forward();
    if (p == Phase::forward) return;
    const Shape& s = shape();
    const TrainLayout& l = layout();
    if (has_act())
      launch_act_backward(this->case_.dtype, s.act, this->in(this->dy_index()), z(), dz_.data(),
                          static_cast<std::int64_t>(s.rows * s.out), this->stream());
    backward_gemms();
    if (layernorm())
      launch_layernorm_backward(this->case_.dtype, ln_params(), dxhat_.data(), section(l.dx), section(l.dgamma),
                                section(l.dbeta), ln_work_.data(), this->stream());
  }

 protected:
  // [xhat = LayerNorm(x)] -> z = xhat W^T + b -> [y = act(z)].
  void forward() {
    const Shape& s = shape();
    if (layernorm()) launch_layernorm_forward(this->case_.dtype, ln_params(), xhat_.data(), this->stream());
    forward_gemm();
    if (has_act())
      launch_act_forward(this->case_.dtype, s.act, z(), section(layout().y),
                         static_cast<std::int64_t>(s.rows * s.out), this->stream());
  }
  // z = gemm_x() W^T + b into z().
  virtual void forward_gemm() = 0;
  // From dz(): dxhat() = dz W, dW and db.
  virtual void backward_gemms() = 0;

  const Shape& shape() const { return shape_; }
  const TrainLayout& layout() const { return layout_; }
  // An offset (in elements) of the TrainLayout output.
  char* section(std::size_t offset) const {
    return static_cast<char*>(this->out()) + offset * size_of(this->case_.dtype);
  }
  bool has_act() const { return shape().act != tensor::Act::none; }
  bool layernorm() const { return shape().layernorm; }
  // z: kept for act' (act=none: y itself); dz: dy * act'(z) (act=none: dy).
  void* z() const { return has_act() ? z_.data() : section(layout().y); }
  const void* dz() const { return has_act() ? dz_.data() : this->in(this->dy_index()); }
  // The GEMMs' x: LayerNorm's output for ln_linear; and where dx = dz W goes before LayerNorm's backward.
  const void* gemm_x() const { return layernorm() ? xhat_.data() : this->in(Op::kX); }
  void* dxhat() const { return layernorm() ? dxhat_.data() : section(layout().dx); }
  LayerNormTrain ln_params() const {
    const Shape& s = shape();
    return {.x = this->in(Op::kX),
            .gamma = static_cast<const float*>(this->in(Op::kGamma)),
            .beta = static_cast<const float*>(this->in(Op::kBeta)),
            .mean = static_cast<float*>(mean_.data()),
            .rstd = static_cast<float*>(rstd_.data()),
            .rows = static_cast<std::int64_t>(s.rows),
            .hidden = static_cast<std::int64_t>(s.hidden)};
  }
  // Allocates what the step keeps (once per setup: the GEMM plans hold its addresses) and runs
  // LayerNorm's forward once, so that plans are timed on real rows.
  void allocate_kept() {
    const Shape& s = shape();
    const std::size_t e = size_of(this->case_.dtype);
    if (has_act()) {
      z_ = cuda::DeviceBuffer(s.rows * s.out * e);
      dz_ = cuda::DeviceBuffer(s.rows * s.out * e);
    }
    if (layernorm()) {
      xhat_ = cuda::DeviceBuffer(s.rows * s.hidden * e);
      dxhat_ = cuda::DeviceBuffer(s.rows * s.hidden * e);
      mean_ = cuda::DeviceBuffer(s.rows * sizeof(float));
      rstd_ = cuda::DeviceBuffer(s.rows * sizeof(float));
      ln_work_ = cuda::DeviceBuffer(layernorm_backward_workspace_bytes(static_cast<std::int64_t>(s.rows),
                                                                       static_cast<std::int64_t>(s.hidden)));
      launch_layernorm_forward(this->case_.dtype, ln_params(), xhat_.data(), this->stream());
    }
  }

  Shape shape_;                                    // set in setup
  TrainLayout layout_;
  cuda::DeviceBuffer z_, dz_;                      // act != none: the pre-activation kept for the backward, and dz
  cuda::DeviceBuffer xhat_, dxhat_, mean_, rstd_;  // ln_linear: LayerNorm's output and statistics, dxhat
  cuda::DeviceBuffer ln_work_;                     // ln_linear: LayerNorm backward's partial sums
};

}  // namespace opmeter::linear
