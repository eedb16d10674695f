#include "ops/gemm/cuda/lt_matmul.hpp"

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

std::uint32_t algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  std::uint32_t v = 0;
  std::size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written);
  return v;
}

const char* epilogue_name(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "none";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU_BIAS: return "GELU_BIAS (tanh approximation)";
    case CUBLASLT_EPILOGUE_BGRADB: return "BGRADB (bias gradient: A's sum over K)";
    default: return "other";
  }
}

// CUDA events around a few runs, destroyed however the timing ends.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    cuda::check(cudaEventCreate(&start), "cudaEventCreate");
    if (auto e = cudaEventCreate(&stop); e != cudaSuccess) {
      cudaEventDestroy(start);
      cuda::check(e, "cudaEventCreate");
    }
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};
}  // namespace

void check_cublaslt(cublasStatus_t s, const char* what) { check_cublas(s, what, cublasGetStatusString(s)); }

LtMatmul::~LtMatmul() { release(); }

void LtMatmul::release() {
  for (auto* l : {&b_layout_, &a_layout_, &d_layout_}) {
    if (*l) cublasLtMatrixLayoutDestroy(*l);
    *l = nullptr;
  }
  if (desc_) cublasLtMatmulDescDestroy(desc_);
  desc_ = nullptr;
  if (handle_) cublasLtDestroy(handle_);
  handle_ = nullptr;
}

void LtMatmul::plan(const LtProblem& p, const void* a, const void* b, void* d, cudaStream_t s) {
  release();
  problem_ = p;
  const auto t = cuda_types(p.dtype);
  cublasLtHandle_t handle = nullptr;
  check_cublaslt(cublasLtCreate(&handle), "cublasLtCreate");
  handle_ = handle;
  check_cublaslt(cublasLtMatmulDescCreate(&desc_, t.compute, t.scale), "cublasLtMatmulDescCreate");
  // cuBLASLt's A is our B, its B our A (see the layouts below); stored transposed, each flips.
  cublasOperation_t trans_a = p.b_transposed ? CUBLAS_OP_N : CUBLAS_OP_T, trans_b = p.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a), "TRANSA");
  check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b), "TRANSB");
  if (p.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue, sizeof p.epilogue),
                   "EPILOGUE");
    if (p.bias) {
      // The bias is a vector of D's type (cuBLASLt's rule outside integer and fp8 kernels).
      check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof p.bias),
                     "BIAS_POINTER");
    }
  }
  // cuBLASLt's A is our B (W) and its B our A (x): see the layouts below.
  if (p.b_scale)
    check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &p.b_scale, sizeof p.b_scale),
                   "A_SCALE_POINTER");
  if (p.a_scale)
    check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &p.a_scale, sizeof p.a_scale),
                   "B_SCALE_POINTER");
  if (p.row_scales) {
    const std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode), "A_SCALE_MODE");
    check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode), "B_SCALE_MODE");
  }
  if (p.fast_accum) {
    const std::int8_t on = 1;
    check_cublaslt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof on), "FAST_ACCUM");
  }
  const cudaDataType_t a_type = p.a_e5m2 ? CUDA_R_8F_E5M2 : t.ab, b_type = p.b_e5m2 ? CUDA_R_8F_E5M2 : t.ab;
  const std::uint64_t M = p.M, N = p.N, K = p.K;
  // Column-major view: D^T (N x M) = B^T * A^T, where B (N x K row-major) is K x N column-major
  // with ld K, used transposed, and A (M x K row-major) is K x M column-major. A bias per output
  // feature is then a bias per row of D^T, which is what cuBLASLt's bias epilogues broadcast.
  // Stored transposed, B (K x N row-major) is N x K column-major used as is, and A (K x M
  // row-major) M x K column-major used transposed.
  if (p.b_transposed)
    check_cublaslt(cublasLtMatrixLayoutCreate(&b_layout_, b_type, N, K, static_cast<std::int64_t>(N)), "layout B");
  else
    check_cublaslt(cublasLtMatrixLayoutCreate(&b_layout_, b_type, K, N, static_cast<std::int64_t>(K)), "layout B");
  if (p.a_transposed)
    check_cublaslt(cublasLtMatrixLayoutCreate(&a_layout_, a_type, M, K, static_cast<std::int64_t>(M)), "layout A");
  else
    check_cublaslt(cublasLtMatrixLayoutCreate(&a_layout_, a_type, K, M, static_cast<std::int64_t>(K)), "layout A");
  check_cublaslt(cublasLtMatrixLayoutCreate(&d_layout_, t.c, N, M, static_cast<std::int64_t>(N)), "layout D");
  if (workspace_.bytes() != kWorkspaceBytes) workspace_ = cuda::DeviceBuffer(kWorkspaceBytes);

  cublasLtMatmulPreference_t pref = nullptr;
  check_cublaslt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  std::uint64_t ws = workspace_.bytes();
  auto status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  std::vector<cublasLtMatmulHeuristicResult_t> found(kCandidates);
  int count = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, b_layout_, a_layout_, d_layout_, d_layout_, pref,
                                            kCandidates, found.data(), &count);
  cublasLtMatmulPreferenceDestroy(pref);
  check_cublaslt(status, "cublasLtMatmulAlgoGetHeuristic");
  if (count == 0)
    throw Unsupported(fmt::format("cuBLASLt has no algorithm for {}{}{} {}x{}x{} with epilogue {}{} here", to_string(p.dtype),
                                  p.a_e5m2 ? " (A e5m2)" : "", p.b_e5m2 ? " (B e5m2)" : "", M, N, K,
                                  epilogue_name(p.epilogue), p.row_scales ? " and per-row (OUTER_VEC_32F) scales" : ""));
  candidates_ = count;
  pick_fastest(found.data(), count, a, b, d, s);
}

void LtMatmul::matmul(const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d, cudaStream_t s) const {
  const bool integer = cuda_types(problem_.dtype).integer;
  const void* alpha = integer ? static_cast<const void*>(&alpha_i_) : &alpha_f_;
  const void* beta = integer ? static_cast<const void*>(&beta_i_) : &beta_f_;
  // beta = 0: C is not read; D is passed as C too.
  check_cublaslt(cublasLtMatmul(handle_, desc_, alpha, b, b_layout_, a, a_layout_, beta, d, d_layout_, d, d_layout_, &algo,
                                workspace_.data(), workspace_.bytes(), s),
                 "cublasLtMatmul");
}

// Times each candidate with CUDA events (best of a few runs) and keeps the fastest.
void LtMatmul::pick_fastest(const cublasLtMatmulHeuristicResult_t* found, int count, const void* a, const void* b,
                            void* d, cudaStream_t s) {
  EventPair ev;
  float best = std::numeric_limits<float>::infinity();
  algo_ = found[0].algo;
  chosen_ = 0;
  for (int i = 0; i < count; ++i) {
    if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
    float fastest = std::numeric_limits<float>::infinity();
    try {
      matmul(found[i].algo, a, b, d, s);  // warm-up
      for (int r = 0; r < kTrialRuns; ++r) {
        cuda::check(cudaEventRecord(ev.start, s), "cudaEventRecord");
        matmul(found[i].algo, a, b, d, s);
        cuda::check(cudaEventRecord(ev.stop, s), "cudaEventRecord");
        cuda::check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
        float ms = 0;
        cuda::check(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime");
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
}

std::map<std::string, std::string> LtMatmul::details() const {
  auto d = base_details();
  if (problem_.dtype == DType::fp8_e4m3) {
    d["operands"] = fmt::format("A {}, B {}", problem_.a_e5m2 ? "e5m2" : "e4m3", problem_.b_e5m2 ? "e5m2" : "e4m3");
    d["scales"] = problem_.row_scales ? "per row (OUTER_VEC_32F)" : "per tensor (SCALAR_32F)";
    d["fast_accum"] = problem_.fast_accum ? "on" : "off";
  }
  return d;
}

std::map<std::string, std::string> LtMatmul::base_details() const {
  return {{"library", "cuBLASLt cublasLtMatmul"},
          {"compute_type", cuda_types(problem_.dtype).compute_name},
          {"epilogue", epilogue_name(problem_.epilogue)},
          {"algo", fmt::format("id={} tile={} stages={} splitK={} swizzle={} reduction={}",
                               algo_config(algo_, CUBLASLT_ALGO_CONFIG_ID), algo_config(algo_, CUBLASLT_ALGO_CONFIG_TILE_ID),
                               algo_config(algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                               algo_config(algo_, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                               algo_config(algo_, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                               algo_config(algo_, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME))},
          {"algo_choice", fmt::format("fastest of {} heuristic candidates: #{} (heuristic's first: #0)", candidates_, chosen_)},
          {"workspace_bytes", std::to_string(workspace_.bytes())}};
}

}  // namespace opmeter::gemm
