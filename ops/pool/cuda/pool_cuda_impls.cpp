// The pool2d impl of CUDA devices: what opmeter knows of it without the CUDA plugin (so its cases
// plan, and are `skipped` with the reason where no plugin or GPU is). Its code is in cuda/.
#include "src/cuda/cuda_impl.hpp"

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
});

}  // namespace
}  // namespace opmeter::pool
