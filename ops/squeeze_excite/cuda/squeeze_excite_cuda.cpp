// impl `cuda` of squeeze_excite: the spec's host inputs uploaded, opmeter's three kernels
// (squeeze_excite_kernels.cu), y brought back for the spec's check. Shape limits are in the
// impl's ImplDef (squeeze_excite_cuda_impls.cpp).
#include "ops/squeeze_excite/cuda/squeeze_excite_kernels.hpp"
#include "ops/squeeze_excite/squeeze_excite.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::squeeze_excite {
namespace {

class CudaSqueezeExcite : public cuda::DeviceImpl<SqueezeExciteOp> {
 public:
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "plane means (block per plane), FCs (block per sample, fp32), grid-stride scale; "
                       "16-byte accesses where H*W allows"}};
  }

 private:
  void prepare() override {
    const std::size_t bytes = shape_of(case_).planes() * sizeof(float);
    if (means_.bytes() != bytes) {
      means_ = cuda::DeviceBuffer(bytes);
      gates_ = cuda::DeviceBuffer(bytes);
    }
    sms_ = cuda::props(device()).prop.multiProcessorCount;
  }
  void launch() override {
    auto s = shape_of(case_);
    auto param = [this](std::size_t i) { return static_cast<const float*>(in(i)); };
    launch_squeeze_excite(case_.dtype,
                          {.x = in(kX),
                           .y = out(),
                           .w1 = param(kW1),
                           .b1 = param(kB1),
                           .w2 = param(kW2),
                           .b2 = param(kB2),
                           .means = static_cast<float*>(means_.data()),
                           .gates = static_cast<float*>(gates_.data()),
                           .n = static_cast<std::int64_t>(s.n),
                           .c = static_cast<std::int64_t>(s.c),
                           .hw = static_cast<std::int64_t>(s.hw),
                           .r = static_cast<std::int64_t>(s.r),
                           .silu = s.act == Act::silu,
                           .hardsigmoid = s.gate == Gate::hardsigmoid},
                          sms_, stream());
  }

  cuda::DeviceBuffer means_, gates_;
  int sms_ = 1;
};

}  // namespace

// The plugin's half of this impl, named by its declaration in squeeze_excite_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [] { return std::make_unique<CudaSqueezeExcite>(); },
  };
}

}  // namespace opmeter::squeeze_excite
