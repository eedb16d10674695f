#pragma once
// Runs attention_train_products.hpp's products on the device: one cublasGemmStridedBatchedEx per
// sequence, batched over its heads (the head stride is one number; the sequence stride another),
// fp32 accumulation (CUBLAS_COMPUTE_32F) as cuda_unfused's attention does. The scores buffer (S,
// then dP) is fp32, every other tensor in the case's dtype.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <string>

#include "ops/transformer/attention_train_products.hpp"
#include "opmeter/cuda/device.hpp"
#include "opmeter/dtype.hpp"

namespace opmeter::transformer {

struct AttnPointers {
  void* qkv = nullptr;
  void* o = nullptr;
  void* dout = nullptr;
  float* scores = nullptr;
  void* probs = nullptr;
  void* dscores = nullptr;
  void* dqkv = nullptr;
};

class AttentionTrainCublas {
 public:
  AttentionTrainCublas() = default;
  ~AttentionTrainCublas();
  AttentionTrainCublas(const AttentionTrainCublas&) = delete;
  AttentionTrainCublas& operator=(const AttentionTrainCublas&) = delete;

  // The handle on stream s with its own workspace (no allocation inside a CUDA graph's capture).
  void prepare(cudaStream_t s);
  bool prepared() const { return handle_ != nullptr; }
  // Enqueues `step` for every sequence.
  void run(AttnStep step, const AttnDims& dims, DType dtype, const AttnPointers& p) const;

 private:
  cublasHandle_t handle_ = nullptr;
  cuda::DeviceBuffer workspace_;
};

}  // namespace opmeter::transformer
