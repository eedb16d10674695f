// The norm impls of CUDA devices: what opmeter knows of them without the CUDA plugin (so their
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Their code is in cuda/,
// built into the plugin.
#include "opmeter/registry.hpp"

namespace opmeter::norm {
namespace {

const bool registered = [] {
  for (const char* name : {"layernorm", "rmsnorm", "softmax"})
    Registry::global().add(ImplDef{
        .op = name,
        .impl = "cuda",
        .preference = ImplDef::own_kernel,
        .backends = {"cuda"},
        .summary = "opmeter's CUDA kernel: a row per group of lanes, warp or block by width, held in registers "
                   "(wide rows: two passes through shared memory), 16-byte accesses, fp32 statistics",
        .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    });
  Registry::global().add(ImplDef{
      .op = "batchnorm",
      .impl = "cuda",
      .preference = ImplDef::own_kernel,
      .backends = {"cuda"},
      .summary = "opmeter's CUDA kernel: per-channel scale and shift, then one pass with 16-byte accesses",
      .dtypes = {DType::fp32, DType::fp16, DType::bf16},
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::norm
