// conv2d's cuDNN impls, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is compiled into
// opmeter, which lists and plans them on any machine (`skipped` with the reason where no GPU,
// plugin or cuDNN is), and into the cuDNN module, which makes them through the factories beside
// their kernels in this folder.
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::conv {
// The plugin's factories, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cudnn_factory();
cuda::Factory cudnn_nhwc_factory();
cuda::Factory cudnn_unfused_factory();

namespace {

const cuda::CudaImplRegistrar reg_nchw({
    .op = "conv2d",
    .impl = "cudnn",
    .summary = "cuDNN graph: convolution + bias + activation fused, BatchNorm folded into weights and bias; NCHW",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cudnn_factory()),
    .preference = ImplDef::library,
});

const cuda::CudaImplRegistrar reg_nhwc({
    .op = "conv2d",
    .impl = "cudnn_nhwc",
    .summary = "as cudnn, computed in NHWC (x, weights and y transposed outside the timed call), tensor cores' layout",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cudnn_nhwc_factory()),
    .preference = ImplDef::library_alternative,
});

const cuda::CudaImplRegistrar reg_unfused({
    .op = "conv2d",
    .impl = "cudnn_unfused",
    .summary = "cuDNN graph with the convolution alone (BatchNorm not folded), then our per-channel bias + BatchNorm "
               "kernel and our activation kernel, y in memory between them (the fusion baseline); NCHW",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .factory = OPMETER_CUDA_FACTORY(cudnn_unfused_factory()),
    .preference = ImplDef::unfused_last,
});

}  // namespace
}  // namespace opmeter::conv
