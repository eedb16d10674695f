// The transformer_block impl of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This
// file is compiled into opmeter, which lists and plans them on any machine (`skipped` with the
// reason where no GPU or plugin is), and into the CUDA plugin, which makes them through the
// factories beside their kernels in this folder. The flash kernel's shape limits are here, so that
// they give their reason on any machine.
#include <fmt/format.h>

#include "opmeter/cuda/cuda_impl.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

Support flash_head_dims(const Case& c) {
  const auto d = shape_of(c).head_dim();
  if (d != 64 && d != 128)
    return Support::no(
        fmt::format("the flash-attention kernel is built for head_dim (hidden / heads) 64 and 128, not {}", d));
  return Support::yes();
}

// mode=train is accepted only to say why it is skipped: the block's CUDA training step is not built.
Support cuda_block(const Case& c) {
  if (c.get_or("mode", "inference") == "train")
    return Support::no("transformer_block has no CUDA training step (out of scope so far): mode=train runs on the CPU "
                       "(onednn_train) and in the worker (torch, torch_compile)");
  return flash_head_dims(c);
}

const cuda::CudaImplRegistrar reg_cuda({
    .op = "transformer_block",
    .impl = "cuda",
    .summary = "opmeter's CUDA pieces in sequence: layernorm kernel, cuBLASLt GEMMs with bias epilogues, head "
               "split, flash attention, head merge, activation and add kernels (head_dim 64/128)",
    .dtypes = {DType::fp16, DType::bf16},
    .supports = cuda_block,
    .accepts = {"mode", "phase"},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::transformer
