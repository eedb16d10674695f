// The CUDA training impls of `linear` and ln_linear_<act>, each declared once (include/opmeter/cuda/cuda_impl.hpp):
// compiled into opmeter, which lists and plans it anywhere, and into the plugin, which makes it
// through the factory in linear_cublaslt_train.cpp.
//   cublaslt_train  mode=train, linear and ln_linear_<act>: forward with the BIAS epilogue and our
//                   activation kernel, our act' kernel, dx = dz W, and dW = dz^T xhat with the
//                   BGRADB epilogue giving db (three cuBLASLt matmuls); our LayerNorm forward
//                   (keeping mean and rstd) and backward kernels.
//   cublaslt_fp8_train  mode=train, quant=float8dq-tensor / float8dq-row (torchao's float8
//                   training): e4m3 x and W, e5m2 dz with scales from amax on the device, the
//                   transposed fp8 copies the TN-only fp8 GEMM needs, three cuBLASLt fp8 matmuls
//                   (linear_cublaslt_fp8_train.cpp; its device-free rules in fp8_train_plan.hpp).
#include <fmt/format.h>

#include "ops/linear/fp8_train_plan.hpp"
#include "ops/linear/linear.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::linear {

cuda::Factory cublaslt_train_factory();  // the plugin's, beside the impls
cuda::Factory cublaslt_fp8_train_factory();

namespace {

const bool registered = [] {
  for (auto& op : linear_ops())
  cuda::CudaImplRegistrar({
      .op = op,
      .impl = "cublaslt_train",
      .summary = "training step (mode=train): cuBLASLt matmuls for x W^T + b, dz W and dz^T x with db from the BGRADB "
                 "epilogue; our act and act' kernels",
      .dtypes = {DType::fp32, DType::fp16, DType::bf16},
      .supports =
          [](const Case& c) {
            if (recipe_of(c) != "baseline")
              return Support::no(fmt::format("cublaslt_train trains the baseline; quant={} trains in cublaslt_fp8_train "
                                             "(float8dq-*) and the worker's torch forms",
                                             recipe_of(c)));
            return Support::yes();
          },
      .needs = {kMode},
      .accepts = {kPhase},
      .factory = OPMETER_CUDA_FACTORY(cublaslt_train_factory()),
  });
  for (auto& op : linear_ops())
    cuda::CudaImplRegistrar({
        .op = op,
        .impl = "cublaslt_fp8_train",
        .summary = "float8 training step (mode=train, quant=float8dq-tensor / -row): e4m3 x and W, e5m2 dz, scales from "
                   "amax on the device, transposed fp8 copies for the TN backward; three cuBLASLt fp8 matmuls",
        .dtypes = {DType::bf16},
        .supports = [](const Case& c) { return fp8_train::case_support(c); },
        .needs = {kMode, kQuant},
        .accepts = {kPhase, kScalingInput, kScalingWeight, kScalingGrad, kGranularity, kFastAccum},
        .factory = OPMETER_CUDA_FACTORY(cublaslt_fp8_train_factory()),
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
