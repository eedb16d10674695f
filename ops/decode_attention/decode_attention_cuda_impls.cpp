// The decode_attention impl of CUDA devices: what opmeter knows of it without the CUDA plugin (so
// its cases plan, and are `skipped` with the reason where no plugin or GPU is). Its code is in
// cuda/, built into the plugin. Its shape limits are here, so that they give their reason anywhere.
#include <fmt/format.h>

#include "ops/decode_attention/decode_attention.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::decode_attention {
namespace {

constexpr std::size_t kMaxHeadDim = 256;  // cuda/decode_kernels.hpp: the generic path's registers

Support cuda_supports(const Case& c) {
  auto s = shape_of(c);
  if (s.d > kMaxHeadDim)
    return Support::no(fmt::format("the CUDA kernel takes head_dim up to {} (fast for 64 and 128), not {}", kMaxHeadDim, s.d));
  if (s.bh > 0x7fffffffu) return Support::no("batch * heads above 2^31 - 1 blocks");
  return Support::yes();
}

const ImplRegistrar reg({
    .op = "decode_attention",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's flash-decoding kernel: KV split across blocks, fp32 online softmax per key group, "
               "16-byte loads (head_dim 64/128), partials merged by a second kernel",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .supports = cuda_supports,
});

}  // namespace
}  // namespace opmeter::decode_attention
