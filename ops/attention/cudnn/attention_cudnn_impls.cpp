// attention's cuDNN impl, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is compiled into
// opmeter, which lists and plans them on any machine (`skipped` with the reason where no GPU,
// plugin or cuDNN is), and into the cuDNN module, which makes them through the factories beside
// their kernels in this folder.
#include <fmt/format.h>

#include "opmeter/cuda/cuda_impl.hpp"
#include "ops/attention/attention.hpp"

namespace opmeter::attention {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cudnn_factory();

namespace {

// cuDNN's SDPA takes head_dim a multiple of 8, at most 256 (its frontend's support check; on an
// H200 with cuDNN 9.19 its heuristics proposed no engine at head_dim 13). Refused before any GPU
// work; other dtypes and stages are the factory's to refuse.
Support head_dim_supports(const Case& c) {
  const Shape s = shape_of(c);
  if (s.stage != Stage::full || (c.dtype != DType::fp16 && c.dtype != DType::bf16)) return Support::yes();
  if (s.d % 8 == 0 && s.d <= 256) return Support::yes();
  return Support::no(fmt::format(
      "cuDNN's fused flash attention takes head_dim a multiple of 8, at most 256 (head_dim={}); attention/cuda_unfused "
      "runs any",
      s.d));
}

const cuda::CudaImplRegistrar reg_cudnn({
    .op = "attention",
    .impl = "cudnn",
    .summary =
        "cuDNN's fused scaled-dot-product (flash) attention forward through its graph API; stage=full, fp16/bf16",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
    .supports = head_dim_supports,
    .factory = OPMETER_CUDA_FACTORY(cudnn_factory()),
    .preference = ImplDef::library,
});

}  // namespace
}  // namespace opmeter::attention
