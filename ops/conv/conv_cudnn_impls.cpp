// conv2d's cuDNN impls: what opmeter knows of them without the CUDA plugin and its cuDNN module
// (so their cases plan, and are `skipped` with the reason where no GPU, plugin or cuDNN is).
// Their code is in cudnn/, built into libopmeter_cudnn.so.
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

const ImplRegistrar reg_nchw({
    .op = "conv2d",
    .impl = "cudnn",
    .preference = ImplDef::library,
    .backends = {"cuda"},
    .summary = "cuDNN graph: convolution + bias + activation fused, BatchNorm folded into weights and bias; NCHW",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

const ImplRegistrar reg_nhwc({
    .op = "conv2d",
    .impl = "cudnn_nhwc",
    .preference = ImplDef::library_alternative,
    .backends = {"cuda"},
    .summary = "as cudnn, computed in NHWC (x, weights and y transposed outside the timed call), tensor cores' layout",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

const ImplRegistrar reg_unfused({
    .op = "conv2d",
    .impl = "cudnn_unfused",
    .preference = ImplDef::unfused_last,
    .backends = {"cuda"},
    .summary = "cuDNN graph with the convolution alone (BatchNorm not folded), then our per-channel bias + BatchNorm "
               "kernel and our activation kernel, y in memory between them (the fusion baseline); NCHW",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter
