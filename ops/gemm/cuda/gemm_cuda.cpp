// impl `cuda`: opmeter's simple tiled CUDA GEMM, the GPU baseline for correctness at small sizes.
#include <fmt/format.h>

#include "ops/gemm/cuda/gemm_gpu.hpp"
#include "ops/gemm/cuda/gemm_reference_kernel.hpp"

namespace opmeter::gemm {
namespace {
constexpr double kMaxMacs = 1ull << 33;  // 2048^3: tens of ms per call on any supported GPU

class ReferenceCudaGemm : public GpuGemm {
 public:
  void run(std::size_t copy) override {
    use(copy);
    launch_reference_gemm(case_.dtype, a(), b(), c(), d_.M, d_.N, d_.K, stream_);
    cuda::check(cudaGetLastError(), "reference GEMM launch");
  }
  std::map<std::string, std::string> details() const override { return {{"kernel", "16x16 shared-memory tiles, fp32 FMA"}}; }
};

}  // namespace

// The plugin's half of this impl, named by its declaration in gemm_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports =
          [](const Case& c, const cuda::DeviceProps& p) {
            if (auto own = cuda::own_kernels_run_on(p); !own.ok) return own;
            auto d = dims(c);
            if (static_cast<double>(d.M) * static_cast<double>(d.N) * static_cast<double>(d.K) > kMaxMacs)
              return Support::no(fmt::format("the reference CUDA GEMM is for sizes up to M*N*K = 2^33 (here {}x{}x{})", d.M, d.N, d.K));
            return Support::yes();
          },
      .make = [] { return std::make_unique<ReferenceCudaGemm>(); },
  };
}

}  // namespace opmeter::gemm
