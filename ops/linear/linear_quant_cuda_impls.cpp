// The quantized linear and ln_linear_<act> impl of CUDA devices (issue 17): what opmeter knows of
// it without the plugin. Its code is in cuda/linear_quant_cuda.cpp (kernels in cuda/quant_*.cu).
//   cuda_quant  every recipe of src/quant/recipe.hpp:
//     weight-only (int8wo, int4wo-G, hqq-int4-G, float8wo): our mma.sync kernel, the codes
//       decoded in registers inside the GEMM, split-K for decode shapes;
//     int8dq: our per-token quantize kernel, cuBLASLt s8 x s8 -> s32, our scale epilogue;
//     float8dq-tensor / -row: our quantize kernels, cuBLASLt fp8 e4m3 GEMM (scale pointers or a
//       row x channel scale epilogue).
#include <string>
#include <vector>

#include "ops/linear/linear.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::linear {
namespace {

const bool registered = [] {
  for (auto& op : linear_ops())
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "cuda_quant",
        .backends = {"cuda"},
        .summary = "quantized weights: weight-only int8/int4/fp8 decoded inside our mma.sync GEMM (split-K at decode), "
                   "int8 / fp8 dynamic through cuBLASLt with our quantize and scale kernels",
        .dtypes = {DType::bf16, DType::fp16},
        .needs = {kQuant},
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
