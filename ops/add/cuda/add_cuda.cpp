// impl `cuda`: the add spec's host inputs uploaded, one vectorized kernel (add_kernel.cu), the
// output brought back for the spec's check.
#include "ops/add/add.hpp"
#include "ops/add/cuda/add_kernel.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::add {
namespace {

class CudaAdd : public cuda::DeviceImpl<AddSpec> {
 public:
  bool rotates_inputs(const Case&) const override { return true; }  // launch() reads them through in()
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "grid-stride loop, 16-byte vector loads and stores, fp32 sum"}};
  }

 private:
  void launch() override { launch_add(case_.dtype, in(kA), in(kB), out(), static_cast<std::int64_t>(n_), stream()); }
};

}  // namespace

// The plugin's half of this impl, named by its declaration in add_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [] { return std::make_unique<CudaAdd>(); },
  };
}

}  // namespace opmeter::add
