// The bandwidth impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin, which makes them (Backend::make of the cuda backend).
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

const ImplRegistrar reg_cuda({
    .op = "bandwidth",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "grid-stride kernels with 16-byte loads and stores",
    .dtypes = {DType::fp32},
});

}  // namespace
}  // namespace opmeter
