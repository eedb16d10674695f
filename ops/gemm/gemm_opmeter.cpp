// opmeter's own bf16 GEMM on the CPU: the AMX GEMM (ops/tensor/amx_gemm.hpp) on A and B as stored
// (B is N x K, the tiles' transposed packing), C in fp32 as the op defines it for the CPU. It needs
// AMX-BF16 and M, N and K multiples of 32; other cases are skipped saying so.
#include <fmt/format.h>

#include "opmeter/registry.hpp"
#include "ops/gemm/gemm.hpp"
#include "ops/tensor/amx_gemm.hpp"

namespace opmeter::gemm {
namespace {

class OpmeterGemm : public GemmImpl {
 public:
  void prepare() override {
    const auto m = std::size_t(d_.M), n = std::size_t(d_.N), k = std::size_t(d_.K);
    a_tiles_ = tensor::amx_gemm_a_tiles(k, m) ? Buffer(m * k * 2) : Buffer();
    b_tiles_ = tensor::amx_gemm_b_tiles(m) ? Buffer(n * k * 2) : Buffer();
  }
  void run(std::size_t copy) override {
    const auto m = std::size_t(d_.M), n = std::size_t(d_.N), k = std::size_t(d_.K);
    auto bits = [](void* p) { return static_cast<const std::uint16_t*>(p); };
    tensor::amx_gemm_bf16(bits(a(copy)), k, bits(b(copy)), k, nullptr, n, m, k, n,
                          a_tiles_.bytes() ? a_tiles_.as<std::uint16_t>() : nullptr,
                          {.b = tensor::BLayout::n_by_k,
                           .b_tiles = b_tiles_.bytes() ? b_tiles_.as<std::uint16_t>() : nullptr,
                           .c_fp32 = static_cast<float*>(c(copy))});
  }
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "opmeter's AMX GEMM (tdpbf16ps on 32x32 blocks of C), B's panels packed as it runs"}};
  }

 private:
  Buffer a_tiles_, b_tiles_;
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
