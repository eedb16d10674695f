// The decode_attention impl of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file
// is compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason
// where no GPU or plugin is), and into the CUDA plugin, which makes them through the factories
// beside their kernels in this folder. Its shape limits are here, so that they give their reason
// anywhere.
#include <fmt/format.h>

#include "ops/decode_attention/decode_attention.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::decode_attention {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

constexpr std::size_t kMaxHeadDim = 256;  // cuda/decode_kernels.hpp: the generic path's registers

Support cuda_supports(const Case& c) {
  auto s = shape_of(c);
  if (s.d > kMaxHeadDim)
    return Support::no(fmt::format("the CUDA kernel takes head_dim up to {} (fast for 64 and 128), not {}", kMaxHeadDim, s.d));
  if (s.bh > 0x7fffffffu) return Support::no("batch * heads above 2^31 - 1 blocks");
  return Support::yes();
}

const cuda::CudaImplRegistrar reg({
    .op = "decode_attention",
    .impl = "cuda",
    .summary = "opmeter's flash-decoding kernel: KV split across blocks, fp32 online softmax per key group, "
               "16-byte loads (head_dim 64/128), partials merged by a second kernel",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .supports = cuda_supports,
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::decode_attention
