// The activation impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so
// their cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin.
#include "ops/tensor/kernels.hpp"
#include "src/cuda/cuda_impl.hpp"

namespace opmeter::activation {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory(tensor::Act a);

namespace {

const bool registered = [] {
  for (tensor::Act a : tensor::all_acts())
    cuda::CudaImplRegistrar({
        .op = std::string(tensor::to_string(a)),
        .impl = "cuda",
        .summary = "opmeter's CUDA kernel: one pass, 16-byte vector loads and stores, fp32 math",
        .dtypes = {DType::fp32, DType::fp16, DType::bf16},
        .factory = OPMETER_CUDA_FACTORY(cuda_factory(a)),
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::activation
