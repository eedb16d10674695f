// cuBLASLt matmul: C = A * B^T (see gemm.hpp for the layout and types). The heuristic proposes up to kCandidates
// algorithms; each is timed on the case's inputs and the fastest is kept and reported.
#include <cublasLt.h>

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/gemm_gpu.hpp"

namespace opmeter::gemm {
namespace {
constexpr int kCandidates = 8;
constexpr int kTrialRuns = 3;

void cublas_check(cublasStatus_t s, const char* what) { check_cublas(s, what, cublasGetStatusString(s)); }

std::uint32_t algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  std::uint32_t v = 0;
  std::size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written);
  return v;
}

class CublasLtGemm : public GpuGemm {
 public:
  ~CublasLtGemm() override {
    for (auto l : {b_layout_, a_layout_, c_layout_})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
    if (handle_) cublasLtDestroy(handle_);
  }

  void run(std::size_t) override { matmul(algo_); }

  std::map<std::string, std::string> details() const override {
    return {{"library", "cuBLASLt cublasLtMatmul"},
            {"compute_type", cuda_types(case_.dtype).compute_name},
            {"algo", fmt::format("id={} tile={} stages={} splitK={} swizzle={} reduction={}",
                                 algo_config(algo_, CUBLASLT_ALGO_CONFIG_ID), algo_config(algo_, CUBLASLT_ALGO_CONFIG_TILE_ID),
                                 algo_config(algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                                 algo_config(algo_, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                                 algo_config(algo_, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                                 algo_config(algo_, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME))},
            {"algo_choice", fmt::format("fastest of {} heuristic candidates: #{} (heuristic's first: #0)", candidates_, chosen_)},
            {"workspace_bytes", std::to_string(workspace_.bytes())}};
  }

 protected:
  void prepare() override {
    const auto t = cuda_types(case_.dtype);
    cublas_check(cublasLtCreate(&handle_), "cublasLtCreate");
    cublas_check(cublasLtMatmulDescCreate(&desc_, t.compute, t.scale), "cublasLtMatmulDescCreate");
    cublasOperation_t trans = CUBLAS_OP_T, no = CUBLAS_OP_N;
    cublas_check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans), "TRANSA");
    cublas_check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof no), "TRANSB");
    const auto M = static_cast<std::uint64_t>(d_.M), N = static_cast<std::uint64_t>(d_.N), K = static_cast<std::uint64_t>(d_.K);
    // Column-major view: C^T (N x M) = B^T * A^T, where B (N x K row-major) is K x N column-major
    // with ld K, used transposed, and A (M x K row-major) is K x M column-major.
    cublas_check(cublasLtMatrixLayoutCreate(&b_layout_, t.ab, K, N, static_cast<std::int64_t>(K)), "layout B");
    cublas_check(cublasLtMatrixLayoutCreate(&a_layout_, t.ab, K, M, static_cast<std::int64_t>(K)), "layout A");
    cublas_check(cublasLtMatrixLayoutCreate(&c_layout_, t.c, N, M, static_cast<std::int64_t>(N)), "layout C");
    workspace_ = cuda::DeviceBuffer(kWorkspaceBytes);

    cublasLtMatmulPreference_t pref = nullptr;
    cublas_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    std::uint64_t ws = workspace_.bytes();
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    std::vector<cublasLtMatmulHeuristicResult_t> found(kCandidates);
    int count = 0;
    auto status = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, b_layout_, a_layout_, c_layout_, c_layout_, pref,
                                                 kCandidates, found.data(), &count);
    cublasLtMatmulPreferenceDestroy(pref);
    cublas_check(status, "cublasLtMatmulAlgoGetHeuristic");
    if (count == 0)
      throw Unsupported(fmt::format("cuBLASLt has no algorithm for {} {}x{}x{} here", to_string(case_.dtype), M, N, K));
    candidates_ = count;
    pick_fastest(found, count);
  }

 private:
  void matmul(const cublasLtMatmulAlgo_t& algo) {
    const bool integer = cuda_types(case_.dtype).integer;
    const void* alpha = integer ? static_cast<const void*>(&alpha_i_) : &alpha_f_;
    const void* beta = integer ? static_cast<const void*>(&beta_i_) : &beta_f_;
    cublas_check(cublasLtMatmul(handle_, desc_, alpha, b(), b_layout_, a(), a_layout_, beta, c(), c_layout_, c(), c_layout_, &algo,
                                workspace_.data(), workspace_.bytes(), stream_),
                 "cublasLtMatmul");
  }

  // Times each candidate with CUDA events (best of a few runs) and keeps the fastest.
  void pick_fastest(const std::vector<cublasLtMatmulHeuristicResult_t>& found, int count) {
    cudaEvent_t start, stop;
    cuda::check(cudaEventCreate(&start), "cudaEventCreate");
    cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
    float best = std::numeric_limits<float>::infinity();
    algo_ = found[0].algo;
    for (int i = 0; i < count; ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
      float fastest = std::numeric_limits<float>::infinity();
      try {
        matmul(found[i].algo);  // warm-up
        for (int r = 0; r < kTrialRuns; ++r) {
          cuda::check(cudaEventRecord(start, stream_), "cudaEventRecord");
          matmul(found[i].algo);
          cuda::check(cudaEventRecord(stop, stream_), "cudaEventRecord");
          cuda::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
          float ms = 0;
          cuda::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
          fastest = std::min(fastest, ms);
        }
      } catch (const std::exception&) {
        continue;  // a candidate that fails to run is not a candidate
      }
      if (fastest < best) {
        best = fastest;
        algo_ = found[i].algo;
        chosen_ = i;
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t b_layout_ = nullptr, a_layout_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  int candidates_ = 0, chosen_ = 0;
  cuda::DeviceBuffer workspace_;
  float alpha_f_ = 1, beta_f_ = 0;
  std::int32_t alpha_i_ = 1, beta_i_ = 0;
};

cuda::FactoryRegistrar reg({
    .op = "gemm",
    .impl = "cublaslt",
    .supports = [](const Case& c, const cuda::DeviceProps& p) { return dtype_support(c.dtype, p, true); },
    .make = [] { return std::make_unique<CublasLtGemm>(); },
});

}  // namespace
}  // namespace opmeter::gemm
