// conv2d's own CUDA impl, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is compiled into
// opmeter, which lists and plans them on any machine (`skipped` with the reason where no GPU or
// plugin is), and into the CUDA plugin, which makes them through the factories beside their kernels
// in this folder.
#include "opmeter/cuda/cuda_impl.hpp"

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
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::conv
