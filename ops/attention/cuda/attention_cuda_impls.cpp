// The attention impls of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder. The shape limits of the flash kernel are here, so that they give
// their reason on any machine.
#include <fmt/format.h>

#include "ops/attention/attention.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::attention {
// The plugin's factories, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();
cuda::Factory cuda_unfused_factory();

namespace {

Support flash_kernel_supports(const Case& c) {
  if (c.dtype != DType::bf16 && c.dtype != DType::fp16)
    return Support::no(fmt::format("the flash kernel runs on bf16/fp16 tensor cores, not {} (cuda_unfused runs fp32)",
                                   to_string(c.dtype)));
  auto s = shape_of(c);
  if (s.stage != Stage::full) return Support::no("the flash kernel computes stage=full (cuda_unfused runs every stage)");
  if (s.d != 64 && s.d != 128) return Support::no(fmt::format("the flash kernel is built for head_dim 64 and 128, not {}", s.d));
  return Support::yes();
}

const cuda::CudaImplRegistrar reg_flash({
    .op = "attention",
    .impl = "cuda",
    .summary = "opmeter's flash-attention kernel: mma.sync tensor cores, online softmax, K/V tiles through "
               "cp.async double buffers (stage=full, head_dim 64/128)",
    .dtypes = {DType::fp16, DType::bf16},
    .supports = flash_kernel_supports,
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

const cuda::CudaImplRegistrar reg_unfused({
    .op = "attention",
    .impl = "cuda_unfused",
    .summary = "cuBLAS strided-batched GEMM, masked softmax kernel, GEMM: S (fp32) and P in device memory "
               "(the fusion baseline)",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_unfused_factory()),
});

}  // namespace
}  // namespace opmeter::attention
