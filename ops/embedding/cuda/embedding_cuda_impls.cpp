// The embedding impl of CUDA devices: what opmeter knows of it without the CUDA plugin (so its
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Its code is in cuda/.
#include "src/cuda/cuda_impl.hpp"

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
});

}  // namespace
}  // namespace opmeter::embedding
