// conv2d's own CUDA impl: what opmeter knows of it without the CUDA plugin (so its cases plan, and
// are `skipped` with the reason where no GPU or plugin is). Its code is in cuda/, built into the plugin.
#include "src/cuda/cuda_impl.hpp"

namespace opmeter::conv {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

const cuda::CudaImplRegistrar reg_cuda({
    .op = "conv2d",
    .impl = "cuda",
    .summary = "opmeter's depthwise kernels (groups = channels = out_channels only), NCHW: a plane tile staged in shared "
               "memory with its halo, fp32 accumulation, BN folded, bias and activation fused",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
});

}  // namespace
}  // namespace opmeter::conv
