// The loss impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in cuda/,
// built into the plugin.
#include "opmeter/registry.hpp"

namespace opmeter::loss {
namespace {

const ImplRegistrar reg_mse({
    .op = "mse",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's CUDA kernel: one pass, 16-byte loads, fp32 block partials summed by one final block (deterministic)",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});
const ImplRegistrar reg_cross_entropy({
    .op = "cross_entropy",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's CUDA kernel: a row per group of lanes, warp or block, one pass with an online max and sum, fp32 block "
               "partials summed by one final block (deterministic)",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter::loss
