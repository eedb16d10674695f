// The embedding impl of CUDA devices: what opmeter knows of it without the CUDA plugin (so its
// cases plan, and are `skipped` with the reason where no plugin or GPU is). Its code is in cuda/.
#include "opmeter/registry.hpp"

namespace opmeter::embedding {
namespace {

const ImplRegistrar reg_cuda({
    .op = "embedding",
    .impl = "cuda",
    .preference = ImplDef::own_kernel,
    .backends = {"cuda"},
    .summary = "opmeter's gather kernel: a group of threads per row, sized to it (grid-stride), 16-byte copies where a row is a whole "
               "number of 16-byte vectors",
    .dtypes = {DType::fp32, DType::fp16, DType::bf16},
});

}  // namespace
}  // namespace opmeter::embedding
