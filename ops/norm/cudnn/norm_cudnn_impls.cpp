// batchnorm's cuDNN impl, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is compiled into
// opmeter, which lists and plans them on any machine (`skipped` with the reason where no GPU,
// plugin or cuDNN is), and into the cuDNN module, which makes them through the factories beside
// their kernels in this folder.
#include "opmeter/cuda/cuda_impl.hpp"

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
    .preference = ImplDef::library,
});

}  // namespace
}  // namespace opmeter::norm
