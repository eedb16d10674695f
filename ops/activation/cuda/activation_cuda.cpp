// impl `cuda` of every activation: the activation spec's host inputs uploaded, one elementwise
// kernel (activation_kernels.cu), the output brought back for the spec's check.
#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "ops/activation/cuda/activation_kernels.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::activation {
namespace {
using tensor::Act;

class CudaActivation : public cuda::DeviceImpl<ActivationOp> {
 public:
  bool rotates_inputs(const Case&) const override { return true; }  // launch() reads them through in()
  using DeviceImpl::DeviceImpl;
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "grid-stride loop, 4 x 16-byte loads in flight per thread, fp32 math, fast exp"}};
  }

 private:
  void prepare() override {
    const auto& p = cuda::props(device()).prop;
    sm_ = {p.multiProcessorCount, p.sharedMemPerBlockOptin};
  }
  void launch() override {
    launch_activation(act_, case_.dtype, in(0), out(), static_cast<std::int64_t>(out_rows() * out_cols()), sm_, stream());
  }
  cuda::SmInfo sm_;
};

}  // namespace

// The plugin's half of these impls, named by their declarations in activation_cuda_impls.cpp.
cuda::Factory cuda_factory(Act a) {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [a] { return std::make_unique<CudaActivation>(a); },
  };
}

}  // namespace opmeter::activation
