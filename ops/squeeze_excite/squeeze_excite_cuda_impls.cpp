// The squeeze_excite impl of CUDA devices: what opmeter knows of it without the CUDA plugin (so
// its cases plan, and are `skipped` with the reason where no plugin or GPU is). Its code is in
// cuda/, built into the plugin. Its shape limits are here, so that they give their reason anywhere.
#include <fmt/format.h>

#include "ops/squeeze_excite/squeeze_excite.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::squeeze_excite {
namespace {

// The gates kernel keeps one sample's means and hidden values in 48 KiB of shared memory; the
// means kernel is a block per plane.
constexpr std::size_t kMaxChannelsPlusReduced = (48 << 10) / sizeof(float);

Support cuda_supports(const Case& c) {
  auto s = shape_of(c);
  if (s.c + s.r > kMaxChannelsPlusReduced)
    return Support::no(fmt::format("the CUDA kernel holds channels + reduced <= {} values in shared memory, not {}",
                                   kMaxChannelsPlusReduced, s.c + s.r));
  if (s.planes() > 0x7fffffffu) return Support::no("batch * channels above 2^31 - 1 blocks");
  return Support::yes();
}

const ImplRegistrar reg({
    .op = "squeeze_excite",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's kernels: a block per plane for the means, a block per sample for the FCs, a "
               "vectorized scale pass",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .supports = cuda_supports,
});

}  // namespace
}  // namespace opmeter::squeeze_excite
