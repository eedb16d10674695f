// The squeeze_excite impl of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file
// is compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason
// where no GPU or plugin is), and into the CUDA plugin, which makes them through the factories
// beside their kernels in this folder. Its shape limits are here, so that they give their reason
// anywhere.
#include <fmt/format.h>

#include "ops/squeeze_excite/squeeze_excite.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::squeeze_excite {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

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

const cuda::CudaImplRegistrar reg({
    .op = "squeeze_excite",
    .impl = "cuda",
    .summary = "opmeter's kernels: a block per plane for the means, a block per sample for the FCs, a "
               "vectorized scale pass",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .supports = cuda_supports,
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::squeeze_excite
