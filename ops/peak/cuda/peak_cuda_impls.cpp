// The peak impls of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder.
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::peak {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

const cuda::CudaImplRegistrar reg_cuda({
    .op = "peak",
    .impl = "cuda",
    .summary = "own ceilings: fp32 FMA chains (kernel=fma); tensor-core chains by mma.sync (kernel=mma, sm_80+, fp8 "
                   "sm_89+) or Hopper wgmma (kernel=wgmma, sm_90a)",
    .dtypes = {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3, DType::int8},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::peak
