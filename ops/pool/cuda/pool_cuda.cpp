// impl `cuda`: the pool2d spec's host inputs uploaded, our kernel (pool_kernel.cu), the output
// brought back for the spec's check.
#include "ops/pool/cuda/pool_kernel.hpp"
#include "ops/pool/pool.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::pool {
namespace {

class CudaPool : public cuda::DeviceImpl<PoolOp> {
 public:
  bool rotates_inputs(const Case&) const override { return true; }  // launch() reads them through in()
  std::map<std::string, std::string> details() const override {
    return {{"kernel", shape_of(case_).global_avg() ? "global average: a warp per plane, shuffle reduction"
                                                    : "a thread per output, clipped window"}};
  }

 private:
  void launch() override {
    const auto s = shape_of(case_);
    const auto planes = static_cast<std::int64_t>(s.planes()), h = static_cast<std::int64_t>(s.h);
    if (s.global_avg()) {
      launch_global_avg(case_.dtype, planes, h * h, in(kX), out(), stream());
      return;
    }
    const PoolGeometry g{planes, h, std::int64_t(s.k), std::int64_t(s.stride), std::int64_t(s.pad), std::int64_t(s.oh),
                         s.kind == Kind::max};
    launch_pool(case_.dtype, g, in(kX), out(), stream());
  }
};

}  // namespace

// The plugin's half of this impl, named by its declaration in pool_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [] { return std::make_unique<CudaPool>(); },
  };
}

}  // namespace opmeter::pool
