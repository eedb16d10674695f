// OpenBLAS: cblas_sgemm / cblas_dgemm with B transposed (B is stored N x K, see gemm.hpp). Debian's OpenBLAS is built without bf16 (no cblas_sbgemm),
// so bf16 cases are skipped with that reason.
#include <cblas.h>

#include "ops/gemm/gemm.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::gemm {
namespace {

class OpenblasGemm : public GemmImpl {
 public:
  void prepare() override { openblas_set_num_threads(threads()); }
  void run(std::size_t copy) override {
    const auto M = static_cast<blasint>(d_.M), N = static_cast<blasint>(d_.N), K = static_cast<blasint>(d_.K);
    switch (case_.dtype) {
      case DType::fp64:
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0, static_cast<double*>(a(copy)), K,
                    static_cast<double*>(b(copy)), K, 0.0, static_cast<double*>(c(copy)), N);
        break;
      default:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, static_cast<float*>(a(copy)), K,
                    static_cast<float*>(b(copy)), K, 0.0f, static_cast<float*>(c(copy)), N);
        break;
    }
  }
  std::map<std::string, std::string> details() const override {
    return {{"openblas_core", openblas_get_corename()}};
  }
};

ImplRegistrar reg({
    .op = "gemm",
    .impl = "openblas",
    .preference = ImplDef::library,
    .summary = "OpenBLAS cblas_sgemm / cblas_dgemm",
    .dtypes = {DType::fp64, DType::fp32},
    .make = [] { return std::make_unique<OpenblasGemm>(); },
});
}  // namespace
}  // namespace opmeter::gemm
