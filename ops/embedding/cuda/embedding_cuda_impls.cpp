// The embedding impl of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder.
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::embedding {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory();

namespace {

const cuda::CudaImplRegistrar reg_cuda({
    .op = "embedding",
    .impl = "cuda",
    .summary = "opmeter's gather kernel: a group of threads per row, sized to it (grid-stride), 16-byte copies where a row is a whole "
               "number of 16-byte vectors",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
    .preference = ImplDef::own_kernel,
});

}  // namespace
}  // namespace opmeter::embedding
