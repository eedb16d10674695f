// Plain loops with fp64 accumulation: the correctness oracle, run only at small sizes.
// C = A * B^T with B stored N x K (gemm.hpp): both operands are read along K.
#include <cstdint>

#include <fmt/format.h>

#include "ops/gemm/gemm.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::gemm {
namespace {
constexpr double kMaxMacs = 1 << 27;  // 512^3: about a tenth of a second per call

template <class TA, class TB, class TC, class Load>
void reference_gemm(const TA* a, const TB* b, TC* c, Dims d, int threads, Load load) {
#pragma omp parallel for num_threads(threads)
  for (std::int64_t i = 0; i < d.M; ++i)
    for (std::int64_t j = 0; j < d.N; ++j) {
      double acc = 0;
      for (std::int64_t k = 0; k < d.K; ++k) acc += load(a[i * d.K + k]) * load(b[j * d.K + k]);
      c[i * d.N + j] = static_cast<TC>(acc);
    }
}

class ReferenceGemm : public GemmImpl {
 public:
  void run(std::size_t copy) override {
    auto plain = [](auto x) { return static_cast<double>(x); };
    switch (case_.dtype) {
      case DType::fp64:
        reference_gemm(static_cast<double*>(a(copy)), static_cast<double*>(b(copy)), static_cast<double*>(c(copy)), d_, threads(), plain);
        break;
      case DType::bf16:
        reference_gemm(static_cast<std::uint16_t*>(a(copy)), static_cast<std::uint16_t*>(b(copy)), static_cast<float*>(c(copy)), d_,
                       threads(), [](std::uint16_t x) { return static_cast<double>(from_bf16(x)); });
        break;
      case DType::int8:
        reference_gemm(static_cast<std::uint8_t*>(a(copy)), static_cast<std::int8_t*>(b(copy)), static_cast<std::int32_t*>(c(copy)),
                       d_, threads(), plain);
        break;
      default:
        reference_gemm(static_cast<float*>(a(copy)), static_cast<float*>(b(copy)), static_cast<float*>(c(copy)), d_, threads(), plain);
        break;
    }
  }
};

ImplRegistrar reg({
    .op = "gemm",
    .impl = "reference",
    .summary = "plain loops, fp64 accumulation (correctness oracle; small sizes only)",
    .dtypes = {DType::fp64, DType::fp32, DType::bf16, DType::int8},
    .supports = [](const Case& c) {
      auto d = dims(c);
      double macs = static_cast<double>(d.M) * static_cast<double>(d.N) * static_cast<double>(d.K);
      if (macs > kMaxMacs) return Support::no(fmt::format("reference runs only up to M*N*K = 2^27 (this case: {:.3g})", macs));
      return Support::yes();
    },
    .make = [] { return std::make_unique<ReferenceGemm>(); },
});
}  // namespace
}  // namespace opmeter::gemm
