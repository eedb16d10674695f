// The pool2d impl of CUDA devices: what opmeter knows of it without the CUDA plugin (so its cases
// plan, and are `skipped` with the reason where no plugin or GPU is). Its code is in cuda/.
#include "opmeter/registry.hpp"

namespace opmeter::pool {
namespace {

const ImplRegistrar reg_cuda({
    .op = "pool2d",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's kernel: a thread per output over its clipped window; global average a warp per plane "
               "with a shuffle reduction; fp32 math",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter::pool
