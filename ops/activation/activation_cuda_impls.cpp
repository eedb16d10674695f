// The activation impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so
// their cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in
// cuda/, built into the plugin.
#include "ops/tensor/kernels.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::activation {
namespace {

const bool registered = [] {
  for (tensor::Act a : tensor::all_acts())
    Registry::global().add(ImplDef{
        .op = std::string(tensor::to_string(a)),
        .impl = "cuda",
        .preference = ImplDef::own_kernel,
        .backends = {"cuda"},
        .summary = "opmeter's CUDA kernel: one pass, 16-byte vector loads and stores, fp32 math",
        .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::activation
