// The pool2d impl of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder.
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::pool {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

const cuda::CudaImplRegistrar reg_cuda({
    .op = "pool2d",
    .impl = "cuda",
    .summary = "opmeter's kernel: a thread per output over its clipped window; global average a warp per plane "
               "with a shuffle reduction; fp32 math",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::pool
