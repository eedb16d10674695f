// The CUDA training impl of `linear` and ln_linear_<act>, declared once (include/opmeter/cuda/cuda_impl.hpp):
// compiled into opmeter, which lists and plans it anywhere, and into the plugin, which makes it
// through the factory in linear_cublaslt_train.cpp.
//   cublaslt_train  mode=train, linear and ln_linear_<act>: forward with the BIAS epilogue and our
//                   activation kernel, our act' kernel, dx = dz W, and dW = dz^T xhat with the
//                   BGRADB epilogue giving db (three cuBLASLt matmuls); our LayerNorm forward
//                   (keeping mean and rstd) and backward kernels.
#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "opmeter/cuda/cuda_impl.hpp"

namespace opmeter::linear {

cuda::Factory cublaslt_train_factory();  // the plugin's, beside the impl

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
              return Support::no(fmt::format("cublaslt_train trains the baseline; quant={} trains in the worker's torch forms",
                                             recipe_of(c)));
            return Support::yes();
          },
      .needs = {kMode},
      .accepts = {kPhase},
      .factory = OPMETER_CUDA_FACTORY(cublaslt_train_factory()),
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
