#include "ops/transformer/cuda/attention_train_cublas.hpp"

#include "ops/gemm/cuda/gemm_gpu.hpp"

namespace opmeter::transformer {
namespace {
constexpr std::size_t kWorkspaceBytes = 32u << 20;

void cublas_check(cublasStatus_t s, const char* what) { gemm::check_cublas(s, what, cublasGetStatusString(s)); }

cudaDataType_t cuda_type(DType d) { return d == DType::bf16 ? CUDA_R_16BF : d == DType::fp16 ? CUDA_R_16F : CUDA_R_32F; }

struct Resolved {
  char* base;
  std::size_t elem;
  cudaDataType_t type;
};

Resolved resolve(AttnBuf b, DType dtype, const AttnPointers& p) {
  const cudaDataType_t t = cuda_type(dtype);
  const std::size_t e = size_of(dtype);
  auto bytes = [](void* q) { return static_cast<char*>(q); };
  switch (b) {
    case AttnBuf::qkv: return {bytes(p.qkv), e, t};
    case AttnBuf::o: return {bytes(p.o), e, t};
    case AttnBuf::dout: return {bytes(p.dout), e, t};
    case AttnBuf::scores: return {bytes(p.scores), sizeof(float), CUDA_R_32F};
    case AttnBuf::probs: return {bytes(p.probs), e, t};
    case AttnBuf::dscores: return {bytes(p.dscores), e, t};
    case AttnBuf::dqkv: return {bytes(p.dqkv), e, t};
  }
  return {nullptr, e, t};
}

}  // namespace

AttentionTrainCublas::~AttentionTrainCublas() {
  if (handle_) cublasDestroy(handle_);
}

void AttentionTrainCublas::prepare(cudaStream_t s) {
  if (handle_) return;
  cublasHandle_t h = nullptr;
  cublas_check(cublasCreate(&h), "cublasCreate");
  handle_ = h;
  cublas_check(cublasSetStream(handle_, s), "cublasSetStream");
  // Split-K reductions in fp32, never in the 16-bit output type (the step's gradients are checked
  // against fp64 with an fp32-accumulation error model).
  cublas_check(cublasSetMathMode(handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                                    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
               "cublasSetMathMode");
  workspace_ = cuda::DeviceBuffer(kWorkspaceBytes);
  cublas_check(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()), "cublasSetWorkspace");
}

void AttentionTrainCublas::run(AttnStep step, const AttnDims& dims, DType dtype, const AttnPointers& p) const {
  const float zero = 0.0f;
  for (std::int64_t b = 0; b < dims.batch; ++b) {
    const AttnProduct g = attn_product(dims, step, b);
    const Resolved a = resolve(g.a.buf, dtype, p), bb = resolve(g.b.buf, dtype, p), c = resolve(g.c.buf, dtype, p);
    cublas_check(
        cublasGemmStridedBatchedEx(handle_, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), &g.alpha,
                                   a.base + g.a.offset * std::int64_t(a.elem), a.type, static_cast<int>(g.a.ld), g.a.stride,
                                   bb.base + g.b.offset * std::int64_t(bb.elem), bb.type, static_cast<int>(g.b.ld),
                                   g.b.stride, &zero,
                                   c.base + g.c.offset * std::int64_t(c.elem), c.type,
                                   static_cast<int>(g.c.ld), g.c.stride, static_cast<int>(g.batch_count),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        g.name);
  }
}

}  // namespace opmeter::transformer
