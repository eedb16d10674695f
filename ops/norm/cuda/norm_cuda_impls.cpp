// The norm impls of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder.
#include <utility>

#include "ops/norm/norm.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::norm {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory(Kind kind);

namespace {

const bool registered = [] {
  for (auto [kind, name] : {std::pair{Kind::layernorm, "layernorm"}, {Kind::rmsnorm, "rmsnorm"}, {Kind::softmax, "softmax"}})
    cuda::CudaImplRegistrar({
        .op = name,
        .impl = "cuda",
        .summary = "opmeter's CUDA kernel: a row per group of lanes, warp or block by width, held in registers "
                   "(wide rows: two passes through shared memory), 16-byte accesses, fp32 statistics",
        .dtypes = {DType::fp32, DType::fp16, DType::bf16},
        .factory = OPMETER_CUDA_FACTORY(cuda_factory(kind)),
        .preference = ImplDef::own_kernel,
    });
  cuda::CudaImplRegistrar({
      .op = "batchnorm",
      .impl = "cuda",
      .summary = "opmeter's CUDA kernel: per-channel scale and shift, then one pass with 16-byte accesses",
      .dtypes = {DType::fp32, DType::fp16, DType::bf16},
      .factory = OPMETER_CUDA_FACTORY(cuda_factory(Kind::batchnorm)),
      .preference = ImplDef::own_kernel,
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::norm
