// cuBLASLt matmul: C = A * B^T (see gemm.hpp for the layout and types). The heuristic proposes up to
// eight algorithms; each is timed on the case's inputs and the fastest is kept and reported
// (lt_matmul.hpp, shared with the linear impls).
#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/gemm_gpu.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"

namespace opmeter::gemm {
namespace {

class CublasLtGemm : public GpuGemm {
 public:
  void run(std::size_t copy) override {
    use(copy);
    lt_.run(a(), b(), c(), stream_);
  }
  std::map<std::string, std::string> details() const override { return lt_.details(); }

 protected:
  void prepare() override {
    lt_.plan({.dtype = case_.dtype,
              .M = static_cast<std::uint64_t>(d_.M),
              .N = static_cast<std::uint64_t>(d_.N),
              .K = static_cast<std::uint64_t>(d_.K)},
             a(), b(), c(), stream_);
  }

 private:
  LtMatmul lt_;
};

}  // namespace

// The plugin's half of this impl, named by its declaration in gemm_cuda_impls.cpp.
cuda::Factory cublaslt_factory() {
  return {
      .supports = [](const Case& c, const cuda::DeviceProps& p) { return dtype_support(c.dtype, p, true); },
      .make = [] { return std::make_unique<CublasLtGemm>(); },
  };
}

}  // namespace opmeter::gemm
