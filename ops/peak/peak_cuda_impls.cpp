// The peak impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin, which makes them (Backend::make of the cuda backend).
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

const ImplRegistrar reg_cuda({
    .op = "peak",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "own ceilings: fp32 FMA chains (kernel=fma); tensor-core chains by mma.sync (kernel=mma, sm_80+, fp8 "
                   "sm_89+) or Hopper wgmma (kernel=wgmma, sm_90a)",
    .dtypes = {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3, DType::int8},
});

}  // namespace
}  // namespace opmeter
