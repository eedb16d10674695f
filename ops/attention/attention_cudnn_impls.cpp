// attention's cuDNN impl: what opmeter knows of it without the CUDA plugin and its cuDNN module
// (so its cases plan, and are `skipped` with the reason where no GPU, plugin or cuDNN is). Its
// code is in cudnn/, built into libopmeter_cudnn.so.
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

const ImplRegistrar reg_cudnn({
    .op = "attention",
    .impl = "cudnn",
    .preference = ImplDef::library,
    .backends = {"cuda"},
    .summary = "cuDNN's fused scaled-dot-product (flash) attention forward through its graph API; stage=full, fp16/bf16",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter
