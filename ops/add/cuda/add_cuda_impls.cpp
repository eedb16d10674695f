// The add impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin, which makes them (Backend::make of the cuda backend).
#include "src/cuda/cuda_impl.hpp"

namespace opmeter::add {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

const cuda::CudaImplRegistrar reg_cuda({
    .op = "add",
    .impl = "cuda",
    .summary = "opmeter's kernel: grid-stride loop with 16-byte vector loads and stores, fp32 sum",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
});

}  // namespace
}  // namespace opmeter::add
