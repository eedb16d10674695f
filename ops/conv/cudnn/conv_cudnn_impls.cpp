// conv2d's cuDNN impls, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is compiled into
// opmeter, which lists and plans them on any machine (`skipped` with the reason where no GPU,
// plugin or cuDNN is), and into the cuDNN module, which makes them through the factories beside
// their kernels in this folder.
#include <fmt/format.h>

#include "opmeter/cuda/cuda_impl.hpp"
#include "ops/conv/conv.hpp"

namespace opmeter::conv {
// The plugin's factories, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cudnn_factory();
cuda::Factory cudnn_nhwc_factory();
cuda::Factory cudnn_unfused_factory();

namespace {

// cuDNN (9.14, on an H200) proposed no engine for any fp16/bf16 NCHW conv+bias[+activation] graph
// whose tensors were not channels-last as well, with BatchNorm or without, with an activation or
// without; the same graphs in NHWC ran. An NCHW tensor of one channel or of a 1x1 plane is laid out
// as NHWC too: the one NCHW case that ran. Refused before any GPU work, naming what runs instead.
Support nchw_supports(const Case& c) {
  if (c.dtype != DType::fp16 && c.dtype != DType::bf16) return Support::yes();
  const Shape s = shape_of(c);
  auto channels_last_too = [](std::size_t channels, std::size_t plane) { return channels == 1 || plane == 1; };
  if (channels_last_too(s.c, s.h) && channels_last_too(s.cg(), s.r) && channels_last_too(s.oc, s.oh))
    return Support::yes();
  return Support::no(fmt::format(
      "cuDNN has no fused {} NCHW engine for conv+bias{}: on an H200 (cuDNN 9.14) its heuristics proposed none for 16-bit "
      "NCHW tensors that are not also channels-last; run cudnn_nhwc (the same fusion in NHWC) or cudnn_unfused (the "
      "convolution alone, then our bias and activation kernels)",
      to_string(c.dtype), s.act == tensor::Act::none ? std::string() : fmt::format("+{}", tensor::to_string(s.act))));
}

const cuda::CudaImplRegistrar reg_nchw({
    .op = "conv2d",
    .impl = "cudnn",
    .summary = "cuDNN graph: convolution + bias + activation fused, BatchNorm folded into weights and bias; NCHW",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .supports = nchw_supports,
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
