// opmeter's own bf16 GEMM on the CPU: the AMX GEMM (ops/tensor/amx_gemm.hpp) on A and B as stored
// (B is N x K, the tiles' transposed packing), C in fp32 as the op defines it for the CPU. It needs
// AMX-BF16 and M, N and K multiples of 32; other cases are skipped saying so.
#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "ops/gemm/gemm.hpp"
#include "ops/tensor/amx_gemm.hpp"
#include "ops/tensor/amx_projection.hpp"

namespace opmeter::gemm {
namespace {

class OpmeterGemm : public GemmImpl {
 public:
  void prepare() override { projection_.prepare(std::size_t(d_.M), {std::size_t(d_.K)}, std::size_t(d_.N * d_.K)); }
  void run(std::size_t copy) override {
    projection_.run_fp32(a(copy), b(copy), static_cast<float*>(c(copy)), std::size_t(d_.K), std::size_t(d_.N));
  }
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "opmeter's AMX GEMM (tdpbf16ps on 32x32 blocks of C), B's panels packed as it runs"}};
  }

 private:
  tensor::AmxProjection projection_;  // B (N x K) is a layer's weight as stored
};

Support supports(const Case& c) {
  const Dims d = dims(c);
  if (d.M <= 0 || d.N <= 0 || d.K <= 0 ||
      !tensor::amx_gemm_fits(std::size_t(d.M), std::size_t(d.K), std::size_t(d.N)))
    return Support::no(fmt::format("opmeter's bf16 GEMM runs on AMX-BF16 with M, N and K multiples of 32 (here {}, {}, {}{})",
                                   d.M, d.N, d.K, tensor::amx_gemm_fits(32, 32, 32) ? "" : "; this CPU has no usable AMX-BF16"));
  return Support::yes();
}

ImplRegistrar reg({
    .op = "gemm",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "opmeter's AMX GEMM: bf16 tiles, fp32 C (AMX-BF16, M, N, K multiples of 32)",
    .dtypes = {DType::bf16},
    .supports = supports,
    .make = [] { return std::make_unique<OpmeterGemm>(); },
});

}  // namespace
}  // namespace opmeter::gemm
