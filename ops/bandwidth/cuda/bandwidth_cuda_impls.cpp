// The bandwidth impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin, which makes them (Backend::make of the cuda backend).
#include "src/cuda/cuda_impl.hpp"

namespace opmeter::bandwidth {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

const cuda::CudaImplRegistrar reg_cuda({
    .op = "bandwidth",
    .impl = "cuda",
    .summary = "grid-stride kernels with 16-byte loads and stores",
    .dtypes = {DType::fp32},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
});

}  // namespace
}  // namespace opmeter::bandwidth
