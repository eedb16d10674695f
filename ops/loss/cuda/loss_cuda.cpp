// impl `cuda` of mse and cross_entropy: the loss spec's host inputs uploaded, opmeter's kernels
// (loss_kernels.cu: per-block partials, then one final block), the scalar brought back for the
// spec's check.
#include "ops/loss/cuda/loss_kernels.hpp"
#include "ops/loss/loss.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::loss {
namespace {

class CudaLoss : public cuda::DeviceImpl<LossOp> {
 public:
  bool rotates_inputs(const Case&) const override { return true; }  // launch() reads them through in()
  using DeviceImpl::DeviceImpl;
  std::map<std::string, std::string> details() const override { return {{"kernel", plan_.shape}}; }

 private:
  void prepare() override {
    const auto& p = cuda::props(device()).prop;
    const cuda::SmInfo sm{p.multiProcessorCount, p.sharedMemPerBlockOptin};
    const auto rows = static_cast<std::int64_t>(tensor::rows_of(case_));
    const int hidden = static_cast<int>(tensor::hidden_of(case_));
    plan_ = kind_ == Kind::mse ? plan_mse(case_.dtype, rows * hidden, sm) : plan_cross_entropy(case_.dtype, rows, hidden, sm);
    if (partials_.bytes() < plan_.grid * sizeof(float)) partials_ = cuda::DeviceBuffer(plan_.grid * sizeof(float));
  }
  void launch() override {
    const auto rows = static_cast<std::int64_t>(tensor::rows_of(case_));
    const int hidden = static_cast<int>(tensor::hidden_of(case_));
    launch_loss(plan_,
                {.a = in(0), .b = in(1), .partials = static_cast<float*>(partials_.data()), .out = static_cast<float*>(out()),
                 .rows = kind_ == Kind::mse ? rows * hidden : rows, .hidden = hidden},
                stream());
  }

  LossPlan plan_;
  cuda::DeviceBuffer partials_;
};

}  // namespace

// The plugin's half of these impls, named by their declarations in loss_cuda_impls.cpp.
cuda::Factory cuda_factory(Kind kind) {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [kind] { return std::make_unique<CudaLoss>(kind); },
  };
}

}  // namespace opmeter::loss
