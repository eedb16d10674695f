// impl `cuda_unfused`: attention as three ops with every intermediate in device memory, like
// onednn_unfused on the CPU (the fusion baseline):
//   S = scale q k^T   cuBLAS strided-batched GEMM, S in fp32 (in the case dtype when S is the output)
//   P = softmax(S)    masked_softmax.cu, one warp per row, P in the case dtype
//   O = P v           cuBLAS strided-batched GEMM
// `stage` stops after S (causal: the hidden scores then set to -inf) or P. fp32 computes in
// fp32 (CUBLAS_COMPUTE_32F, no TF32), as the gemm impls' fp32 does; fp16 and bf16 accumulate in fp32.
#include <cublas_v2.h>

#include <fmt/format.h>

#include "ops/attention/attention.hpp"
#include "ops/attention/cuda/masked_softmax.hpp"
#include "ops/gemm/cuda/gemm_gpu.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::attention {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;

void cublas_check(cublasStatus_t s, const char* what) { gemm::check_cublas(s, what, cublasGetStatusString(s)); }

cudaDataType_t cuda_type(DType d) {
  return d == DType::bf16 ? CUDA_R_16BF : d == DType::fp16 ? CUDA_R_16F : CUDA_R_32F;
}

// Device memory for S and P, beside the inputs and output.
struct Scratch {
  std::size_t scores = 0, probs = 0;
};
Scratch scratch_of(const Case& c) {
  auto s = shape_of(c);
  const std::size_t square = s.heads_total() * s.seq * s.seq;
  return {s.stage != Stage::scores ? square * sizeof(float) : 0, s.stage == Stage::full ? square * size_of(c.dtype) : 0};
}

class CudaUnfusedAttention : public cuda::DeviceImpl<AttentionOp> {
 public:
  ~CudaUnfusedAttention() override {
    if (handle_) cublasDestroy(handle_);
  }

  std::map<std::string, std::string> details() const override {
    return {{"library", "cuBLAS cublasGemmStridedBatchedEx (compute 32F) + opmeter masked softmax"},
            {"scores_bytes", std::to_string(scores_.bytes())},
            {"probs_bytes", std::to_string(probs_.bytes())}};
  }

 private:
  void prepare() override {
    if (handle_) return;  // prepare runs again before each check: the handle and scratch stay
    cublas_check(cublasCreate(&handle_), "cublasCreate");
    cublas_check(cublasSetStream(handle_, stream()), "cublasSetStream");
    // An explicit workspace keeps cuBLAS from allocating during CUDA graph capture.
    workspace_ = cuda::DeviceBuffer(kWorkspaceBytes);
    cublas_check(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()), "cublasSetWorkspace");
    auto need = scratch_of(case_);
    scores_ = cuda::DeviceBuffer(need.scores);
    probs_ = cuda::DeviceBuffer(need.probs);
  }

  void launch() override {
    auto s = shape_of(case_);
    const int n = static_cast<int>(s.seq), d = static_cast<int>(s.d), batch = static_cast<int>(s.heads_total());
    const long long qkv_stride = static_cast<long long>(s.seq * s.d), square = static_cast<long long>(s.seq * s.seq);
    const cudaDataType_t t = cuda_type(case_.dtype);
    const float scale = s.scale(), one = 1.0f, zero = 0.0f;

    // Row-major S (n x n) is column-major S^T = K Q^T: A = K read transposed (stored d x n
    // column-major), B = Q^T as stored.
    const bool scores_out = s.stage == Stage::scores;
    void* scores = scores_out ? out() : scores_.data();
    cublas_check(cublasGemmStridedBatchedEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, &scale, in(kK), t, d, qkv_stride,
                                            in(kQ), t, d, qkv_stride, &zero, scores, scores_out ? t : CUDA_R_32F, n,
                                            square, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx (q k^T)");
    const auto rows = static_cast<std::int64_t>(s.heads_total() * s.seq);
    if (scores_out) {
      if (s.causal) launch_mask_future_scores(case_.dtype, out(), rows, n, stream());
      return;
    }

    void* probs = s.stage == Stage::probs ? out() : probs_.data();
    launch_masked_softmax(case_.dtype, static_cast<const float*>(scores_.data()), probs, rows, n, s.causal, stream());
    if (s.stage == Stage::probs) return;

    // Row-major O (n x d) is column-major O^T = V^T P^T: both as stored.
    cublas_check(cublasGemmStridedBatchedEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, d, n, n, &one, in(kV), t, d, qkv_stride,
                                            probs, t, n, square, &zero, out(), t, d, qkv_stride, batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx (p v)");
  }

  cublasHandle_t handle_ = nullptr;
  cuda::DeviceBuffer workspace_, scores_, probs_;
};

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / double(1u << 30)); }

// S and P of seq x seq per head must fit beside the tensors; cuBLAS takes int sizes.
Support device_supports(const Case& c, const cuda::DeviceProps& p) {
  if (auto own = cuda::own_kernels_run_on(p); !own.ok) return own;
  auto s = shape_of(c);
  if (s.heads_total() > 0x7fffffffu) return Support::no("batch * heads above cuBLAS's int batch count");
  AttentionOp spec;
  spec.bind(c);
  double need = double(spec.output().bytes()) + double(kWorkspaceBytes);
  for (const auto& t : spec.inputs()) need += double(t.bytes());
  auto scratch = scratch_of(c);
  need += double(scratch.scores) + double(scratch.probs);
  cuda::check(cudaSetDevice(c.device_index()), "cudaSetDevice");
  std::size_t free = 0, total = 0;
  cuda::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  if (need > 0.9 * double(free))
    return Support::no(fmt::format("needs {} of device memory (S and P are seq x seq per head), {} free on {}", gib(need),
                                   gib(double(free)), p.prop.name));
  return Support::yes();
}

}  // namespace

// The plugin's half of this impl, named by its declaration in attention_cuda_impls.cpp.
cuda::Factory cuda_unfused_factory() {
  return {
      .supports = device_supports,
      .make = [] { return std::make_unique<CudaUnfusedAttention>(); },
  };
}

}  // namespace opmeter::attention
