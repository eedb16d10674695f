#pragma once
// One cuBLASLt matmul, planned once and run many times: D = A * B^T (+ bias, activation), with A
// M x K, B N x K and D M x N, all row-major (or either operand stored transposed, LtProblem) (gemm.hpp's layout, and a linear layer's x, W, y).
// plan() creates the handle, descriptor and layouts, asks the heuristic for candidate algorithms,
// times each on the buffers given and keeps the fastest; run() is one cublasLtMatmul call. Shared
// by gemm/cublaslt and the linear impls, so a linear and the GEMM of its shape choose alike.
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <string>

#include "opmeter/dtype.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::gemm {

struct LtProblem {
  DType dtype = DType::fp32;
  std::uint64_t M = 0, N = 0, K = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;  // N elements of D's type, for the *_BIAS epilogues
  // fp8: device pointers to one fp32 scale each of A (M x K) and B (N x K), multiplied into D.
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  // Operands stored the other way (a training step's backward GEMMs): A as K x M row-major
  // (D = A^T B^T), B as K x N row-major (D = A B).
  bool a_transposed = false, b_transposed = false;
  // fp8 training (linear's cublaslt_fp8_train): an operand in e5m2 (gradients) instead of e4m3,
  // scales one per row of each operand (cuBLASLt's OUTER_VEC_32F: a_scale M floats, b_scale N),
  // and fast accumulation (FAST_ACCUM: partial sums not promoted to fp32).
  bool a_e5m2 = false, b_e5m2 = false;
  bool row_scales = false;
  bool fast_accum = false;
};

class LtMatmul {
 public:
  LtMatmul() = default;
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // Descriptors, layouts and the algorithm for `p`; runs the candidates on a, b, d (timing them).
  // Throws Unsupported (-> `skipped`) where cuBLASLt has no algorithm for the problem.
  void plan(const LtProblem& p, const void* a, const void* b, void* d, cudaStream_t s);
  bool planned() const { return handle_ != nullptr; }
  // One matmul with the chosen algorithm, enqueued on s.
  void run(const void* a, const void* b, void* d, cudaStream_t s) const { matmul(algo_, a, b, d, s); }
  // library, compute type, epilogue, the chosen algorithm's configuration, workspace size.
  std::map<std::string, std::string> details() const;

 private:
  void release();
  std::map<std::string, std::string> base_details() const;
  void matmul(const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d, cudaStream_t s) const;
  void pick_fastest(const cublasLtMatmulHeuristicResult_t* found, int count, const void* a, const void* b, void* d,
                    cudaStream_t s);

  LtProblem problem_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t b_layout_ = nullptr, a_layout_ = nullptr, d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  int candidates_ = 0, chosen_ = 0;
  cuda::DeviceBuffer workspace_;
  float alpha_f_ = 1, beta_f_ = 0;
  std::int32_t alpha_i_ = 1, beta_i_ = 0;
};

// cuBLAS(Lt) status to an exception (gemm_gpu.hpp's check_cublas with cuBLAS's own text).
void check_cublaslt(cublasStatus_t s, const char* what);

}  // namespace opmeter::gemm
