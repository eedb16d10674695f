// The loss impls of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder.
#include "ops/loss/loss.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::loss {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory(Kind kind);

namespace {

const cuda::CudaImplRegistrar reg_mse({
    .op = "mse",
    .impl = "cuda",
    .summary = "opmeter's CUDA kernel: one pass, 16-byte loads, fp32 block partials summed by one final block (deterministic)",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory(Kind::mse)),
    .preference = ImplDef::own_kernel,
});
const cuda::CudaImplRegistrar reg_cross_entropy({
    .op = "cross_entropy",
    .impl = "cuda",
    .summary = "opmeter's CUDA kernel: a row per group of lanes, warp or block, one pass with an online max and sum, fp32 block "
               "partials summed by one final block (deterministic)",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory(Kind::cross_entropy)),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::loss
