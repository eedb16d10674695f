// conv2d's own CUDA impl: what opmeter knows of it without the CUDA plugin (so its cases plan, and
// are `skipped` with the reason where no GPU or plugin is). Its code is in cuda/, built into the plugin.
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

const ImplRegistrar reg_cuda({
    .op = "conv2d",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's depthwise kernels (groups = channels = out_channels only), NCHW: a plane tile staged in shared "
               "memory with its halo, fp32 accumulation, BN folded, bias and activation fused",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter
