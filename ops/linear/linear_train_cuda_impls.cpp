// The CUDA training impl of `linear` as opmeter knows it without the CUDA plugin (so its cases
// plan, and are `skipped` with the reason where no plugin or GPU is); its code is
// ops/linear/cuda/linear_cublaslt_train.cpp, in the plugin.
//   cublaslt_train  mode=train, linear and ln_linear_<act>: forward with the BIAS epilogue and our
//                   activation kernel, our act' kernel, dx = dz W, and dW = dz^T xhat with the
//                   BGRADB epilogue giving db (three cuBLASLt matmuls); our LayerNorm forward
//                   (keeping mean and rstd) and backward kernels.
#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::linear {
namespace {

const bool registered = [] {
  for (auto& op : linear_ops())
  Registry::global().add(ImplDef{
      .op = op,
      .impl = "cublaslt_train",
      .backends = {"cuda"},
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
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
