// The transformer_block impl of CUDA devices: what opmeter knows of it without the CUDA plugin
// (so its cases plan, and are `skipped` with the reason where no plugin or GPU is). Its code is
// in cuda/, built into the plugin. The flash kernel's shape limits are here, so that they give
// their reason on any machine.
#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {
namespace {

Support flash_head_dims(const Case& c) {
  const auto d = shape_of(c).head_dim();
  if (d != 64 && d != 128)
    return Support::no(
        fmt::format("the flash-attention kernel is built for head_dim (hidden / heads) 64 and 128, not {}", d));
  return Support::yes();
}

const ImplRegistrar reg_cuda({
    .op = "transformer_block",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's CUDA pieces in sequence: layernorm kernel, cuBLASLt GEMMs with bias epilogues, head "
               "split, flash attention, head merge, activation and add kernels (head_dim 64/128)",
    .dtypes = {DType::fp16, DType::bf16},
    .supports = flash_head_dims,
});

}  // namespace
}  // namespace opmeter::transformer
