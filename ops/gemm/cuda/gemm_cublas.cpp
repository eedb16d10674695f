// cuBLAS cublasGemmEx: C = A * B^T (see gemm.hpp for the layout and types).
#include <cublas_v2.h>

#include <fmt/format.h>

#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/gemm_gpu.hpp"

namespace opmeter::gemm {
namespace {

void cublas_check(cublasStatus_t s, const char* what) { check_cublas(s, what, cublasGetStatusString(s)); }

class CublasGemm : public GpuGemm {
 public:
  ~CublasGemm() override {
    if (handle_) cublasDestroy(handle_);
  }

  void run(std::size_t copy) override {
    use(copy);
    const auto t = cuda_types(case_.dtype);
    const void* alpha = t.integer ? static_cast<const void*>(&alpha_i_) : &alpha_f_;
    const void* beta = t.integer ? static_cast<const void*>(&beta_i_) : &beta_f_;
    // Column-major view: C^T (N x M) = B (stored N x K, read transposed) * A^T (K x M).
    cublas_check(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(d_.N), static_cast<int>(d_.M),
                              static_cast<int>(d_.K), alpha, b(), t.ab, static_cast<int>(d_.K), a(), t.ab, static_cast<int>(d_.K),
                              beta, c(), t.c, static_cast<int>(d_.N), t.compute, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }

  std::map<std::string, std::string> details() const override {
    return {{"library", "cuBLAS cublasGemmEx"}, {"compute_type", cuda_types(case_.dtype).compute_name},
            {"workspace_bytes", std::to_string(workspace_.bytes())}};
  }

 protected:
  void prepare() override {
    cublas_check(cublasCreate(&handle_), "cublasCreate");
    cublas_check(cublasSetStream(handle_, stream_), "cublasSetStream");
    // An explicit workspace keeps cuBLAS from allocating during CUDA graph capture.
    workspace_ = cuda::DeviceBuffer(kWorkspaceBytes);
    cublas_check(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()), "cublasSetWorkspace");
  }

 private:
  cublasHandle_t handle_ = nullptr;
  cuda::DeviceBuffer workspace_;
  float alpha_f_ = 1, beta_f_ = 0;
  std::int32_t alpha_i_ = 1, beta_i_ = 0;
};

}  // namespace

// The plugin's half of this impl, named by its declaration in gemm_cuda_impls.cpp.
cuda::Factory cublas_factory() {
  return {
      .supports = [](const Case& c, const cuda::DeviceProps& p) { return dtype_support(c.dtype, p, false); },
      .make = [] { return std::make_unique<CublasGemm>(); },
  };
}

}  // namespace opmeter::gemm
