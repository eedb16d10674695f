// The add impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin, which makes them (Backend::make of the cuda backend).
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

const ImplRegistrar reg_cuda({
    .op = "add",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's kernel: grid-stride loop with 16-byte vector loads and stores, fp32 sum",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter
