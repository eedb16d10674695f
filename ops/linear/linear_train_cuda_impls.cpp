// The CUDA training impl of `linear` as opmeter knows it without the CUDA plugin (so its cases
// plan, and are `skipped` with the reason where no plugin or GPU is); its code is
// ops/linear/cuda/linear_cublaslt_train.cpp, in the plugin.
//   cublaslt_train  mode=train, act=none: forward with the BIAS epilogue, dx = dy W, and
//                   dW = dy^T x with the BGRADB epilogue giving db (three cuBLASLt matmuls)
#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::linear {
namespace {

const bool registered = [] {
  Registry::global().add(ImplDef{
      .op = "linear",
      .impl = "cublaslt_train",
      .backends = {"cuda"},
      .summary = "training step (mode=train, act=none): cuBLASLt matmuls for x W^T + b, dy W and dy^T x with db from "
                 "the BGRADB epilogue",
      .dtypes = {DType::fp32, DType::fp16, DType::bf16},
      .supports =
          [](const Case& c) {
            if (recipe_of(c) != "baseline")
              return Support::no(fmt::format("cublaslt_train trains the baseline; quant={} trains in the worker's torch forms",
                                             recipe_of(c)));
            if (shape_of(c).act != tensor::Act::none)
              return Support::no(fmt::format("cublaslt_train has no activation backward yet (act={}): use act=none, or "
                                             "impl torch / onednn_train",
                                             tensor::to_string(shape_of(c).act)));
            return Support::yes();
          },
      .needs = {kMode},
      .accepts = {kPhase},
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
