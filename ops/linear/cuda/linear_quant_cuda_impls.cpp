// The quantized linear and ln_linear_<act> impl of CUDA devices (issue 17), each declared once
// (include/opmeter/cuda/cuda_impl.hpp). This file is compiled into opmeter, which lists and plans them on any
// machine (`skipped` with the reason where no GPU or plugin is), and into the CUDA plugin, which
// makes them through the factories beside their kernels in this folder.
//   cuda_quant  every recipe of ops/linear/quant/recipe.hpp:
//     weight-only (int8wo, int4wo-G, hqq-int4-G, float8wo): our mma.sync kernel, the codes
//       decoded in registers inside the GEMM, split-K for decode shapes;
//     int8dq: our per-token quantize kernel, cuBLASLt s8 x s8 -> s32, our scale epilogue;
//     float8dq-tensor / -row: our quantize kernels, cuBLASLt fp8 e4m3 GEMM (scale pointers or a
//       row x channel scale epilogue).
#include <string>
#include <vector>

#include "ops/linear/linear.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::linear {
// The plugin's factory, beside the kernels in this folder (used only where the plugin compiles this file).
cuda::Factory cuda_quant_factory();

namespace {

const bool registered = [] {
  for (auto& op : linear_ops())
    cuda::CudaImplRegistrar({
        .op = op,
        .impl = "cuda_quant",
        .summary = "quantized weights: weight-only int8/int4/fp8 decoded inside our mma.sync GEMM (split-K at decode), "
                   "int8 / fp8 dynamic through cuBLASLt with our quantize and scale kernels",
        .dtypes = {DType::bf16, DType::fp16},
        .needs = {kQuant},
        .accepts = {kKsplit, kOperand},
        .factory = OPMETER_CUDA_FACTORY(cuda_quant_factory()),
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
