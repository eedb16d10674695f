// The activation impls of CUDA devices, each declared once (include/opmeter/cuda/cuda_impl.hpp). This file is
// compiled into opmeter, which lists and plans them on any machine (`skipped` with the reason where
// no GPU or plugin is), and into the CUDA plugin, which makes them through the factories beside
// their kernels in this folder.
#include "ops/tensor/kernels.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::activation {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_factory(tensor::Act a);

namespace {

const bool registered = [] {
  for (tensor::Act a : tensor::all_acts())
    cuda::CudaImplRegistrar({
        .op = std::string(tensor::to_string(a)),
        .impl = "cuda",
        .summary = "opmeter's CUDA kernel: one pass, 16-byte vector loads and stores, fp32 math",
        .dtypes = {DType::fp32, DType::fp16, DType::bf16},
        .factory = OPMETER_CUDA_FACTORY(cuda_factory(a)),
        .preference = ImplDef::own_kernel,
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::activation
