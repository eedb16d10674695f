// batchnorm's cuDNN impl: what opmeter knows of it without the CUDA plugin and its cuDNN module
// (so its cases plan, and are `skipped` with the reason where no GPU, plugin or cuDNN is). Its
// code is in cudnn/, built into libopmeter_cudnn.so.
#include "src/cuda/cuda_impl.hpp"

namespace opmeter::norm {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cudnn_factory();

namespace {

const cuda::CudaImplRegistrar reg_cudnn({
    .op = "batchnorm",
    .impl = "cudnn",
    .summary = "cuDNN cudnnBatchNormalizationForwardInference, spatial mode over rows x hidden (channels = hidden)",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cudnn_factory()),
});

}  // namespace
}  // namespace opmeter::norm
