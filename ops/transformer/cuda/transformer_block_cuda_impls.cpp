// The transformer_block impl of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This
// file is compiled into opmeter, which lists and plans them on any machine (`skipped` with the
// reason where no GPU or plugin is), and into the CUDA plugin, which makes them through the
// factories beside their kernels in this folder. The flash kernel's shape limits are here, so that
// they give their reason on any machine.
#include <fmt/format.h>

#include "opmeter/cuda/cuda_impl.hpp"
#include "ops/linear/linear.hpp"
#include "ops/transformer/transformer_block.hpp"
#include "ops/transformer/transformer_quant.hpp"

namespace opmeter::transformer {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();
cuda::Factory cuda_quant_factory();
cuda::Factory cuda_train_factory();

namespace {

Support flash_head_dims(const Case& c) {
  const auto d = shape_of(c).head_dim();
  if (d != 64 && d != 128)
    return Support::no(
        fmt::format("the flash-attention kernel is built for head_dim (hidden / heads) 64 and 128, not {}", d));
  return Support::yes();
}

bool train_mode(const Case& c) { return c.get_or(linear::kMode, "inference") == linear::kTrain; }

const cuda::CudaImplRegistrar reg_cuda({
    .op = "transformer_block",
    .impl = "cuda",
    .summary = "opmeter's CUDA pieces in sequence: layernorm kernel, cuBLASLt GEMMs with bias epilogues, head "
               "split, flash attention, head merge, activation and add kernels (head_dim 64/128)",
    .dtypes = {DType::fp16, DType::bf16},
    .supports = flash_head_dims,
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

// Weight-only recipes only (the block's activations stay in the case's dtype), with groups that
// divide hidden and mlp; the kernel's own limits (int4 group sizes, fp8 on 8.9+) are the plugin's.
Support cuda_quant_block(const Case& c) {
  if (auto why = recipe_problem(c); !why.empty()) return Support::no(why);
  if (!quantized(c)) return Support::no("cuda_quant runs quantized recipes (the baseline: impl cuda)");
  return flash_head_dims(c);
}

const cuda::CudaImplRegistrar reg_cuda_quant({
    .op = "transformer_block",
    .impl = "cuda_quant",
    .summary = "impl cuda with its four projections through cuda_quant's weight-only kernel (int8 / int4 / fp8 "
               "codes decoded in registers inside an mma.sync GEMM); SQNR of y - x as opmeter_quant reports it",
    .dtypes = {DType::fp16, DType::bf16},
    .supports = cuda_quant_block,
    .needs = {linear::kQuant},
    .factory = OPMETER_CUDA_FACTORY(cuda_quant_factory()),
});

// The training step: any head_dim (attention's products are cuBLAS GEMMs, not the flash kernel).
const cuda::CudaImplRegistrar reg_cuda_train({
    .op = "transformer_block",
    .impl = "cuda_train",
    .summary = "training step (mode=train): cuBLASLt projections forward and backward (BIAS, BGRADB epilogues), "
               "attention as cuBLAS batched GEMMs around our masked softmax and its backward (P kept), our LayerNorm, "
               "act' and add kernels",
    .dtypes = {DType::fp16, DType::bf16},
    .supports =
        [](const Case& c) {
          if (!train_mode(c)) return Support::no("cuda_train runs mode=train (the inference forward: impl cuda)");
          return Support::yes();
        },
    .needs = {linear::kMode},
    .accepts = {linear::kPhase},
    .factory = OPMETER_CUDA_FACTORY(cuda_train_factory()),
});

}  // namespace
}  // namespace opmeter::transformer
