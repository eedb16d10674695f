// impl `cuda` of layernorm, rmsnorm, softmax and batchnorm: the norm spec's host inputs uploaded,
// opmeter's kernels (norm_kernels.cu), the output brought back for the spec's check.
#include <fmt/format.h>

#include "ops/norm/cuda/norm_kernels.hpp"
#include "ops/norm/norm.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::norm {
namespace {

class CudaNorm : public cuda::DeviceImpl<NormOp> {
 public:
  bool rotates_inputs(const Case&) const override { return true; }  // launch() reads them through in()
  using DeviceImpl::DeviceImpl;
  std::map<std::string, std::string> details() const override {
    if (kind_ == Kind::batchnorm) return {{"kernel", "per-channel scale and shift, then one pass with 16-byte accesses where rows allow"}};
    return {{"kernel", plan_.shape}};
  }

 private:
  void prepare() override {
    const auto& p = cuda::props(device()).prop;
    sm_ = {p.multiProcessorCount, p.sharedMemPerBlockOptin};
    const auto rows = static_cast<std::int64_t>(out_rows());
    const int hidden = static_cast<int>(out_cols());
    switch (kind_) {
      case Kind::layernorm: plan_ = plan_rows(RowOp::layernorm, case_.dtype, rows, hidden, sm_); break;
      case Kind::rmsnorm: plan_ = plan_rows(RowOp::rmsnorm, case_.dtype, rows, hidden, sm_); break;
      case Kind::softmax: plan_ = plan_rows(RowOp::softmax, case_.dtype, rows, hidden, sm_); break;
      case Kind::batchnorm:
        if (scale_shift_.bytes() != 2 * out_cols() * sizeof(float)) scale_shift_ = cuda::DeviceBuffer(2 * out_cols() * sizeof(float));
        break;
    }
  }
  void launch() override {
    const auto rows = static_cast<std::int64_t>(out_rows());
    const int hidden = static_cast<int>(out_cols());
    auto param = [this](std::size_t i) { return static_cast<const float*>(in(i)); };
    switch (kind_) {
      case Kind::layernorm: launch_rows(plan_, {.x = in(0), .y = out(), .gamma = param(1), .beta = param(2), .rows = rows, .hidden = hidden}, stream()); break;
      case Kind::rmsnorm: launch_rows(plan_, {.x = in(0), .y = out(), .gamma = param(1), .rows = rows, .hidden = hidden}, stream()); break;
      case Kind::softmax: launch_rows(plan_, {.x = in(0), .y = out(), .rows = rows, .hidden = hidden}, stream()); break;
      case Kind::batchnorm:
        launch_batchnorm(case_.dtype, in(0), out(), param(1), param(2), param(3), param(4), static_cast<float*>(scale_shift_.data()),
                         rows, hidden, sm_, stream());
        break;
    }
  }

  cuda::SmInfo sm_;
  RowPlan plan_;
  cuda::DeviceBuffer scale_shift_;
};

}  // namespace

// The plugin's half of these impls, named by their declarations in norm_cuda_impls.cpp.
cuda::Factory cuda_factory(Kind kind) {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [kind] { return std::make_unique<CudaNorm>(kind); },
  };
}

}  // namespace opmeter::norm
