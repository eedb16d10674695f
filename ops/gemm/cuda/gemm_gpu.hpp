#pragma once
// What the CUDA GEMM impls share: device buffers, random inputs, poisoning and the check.
// Layout: A is M x K, B is stored N x K (a linear layer's weight; the layout cuBLASLt needs for
// fp8 and int8), C = A * B^T is M x N, all row-major. Types: fp32/tf32 -> fp32, fp16 -> fp16,
// bf16 -> bf16, fp8 e4m3 -> bf16, int8 (s8 x s8) -> s32; fp32 accumulation (s32 for int8).
// The check: sampled elements of C against fp64 sums of the same (rounded) inputs on the host.
#include <cstdint>
#include <vector>

#include "ops/gemm/gemm.hpp"
#include "src/cuda/plugin/device.hpp"

namespace opmeter::gemm {

// Normalized error bound per dtype: accumulation rounding grows like sqrt(K); tf32 rounds its
// inputs to 10 mantissa bits; 16-bit outputs round once more.
double gpu_tolerance(DType d, std::int64_t K);

class GpuGemm : public Impl {
 public:
  void setup(const Case& c, const SetupOptions& options) override;
  void sync() override;
  Check verify(std::uint64_t seed) override;

 protected:
  virtual void prepare() {}  // handles, descriptors, algorithm choice (inputs are on the device)
  void* a() const { return a_.data(); }
  void* b() const { return b_.data(); }
  void* c() const { return c_.data(); }
  std::size_t a_bytes() const { return host_a_.size(); }

  Case case_;
  Dims d_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;

 private:
  void upload_inputs(std::uint64_t seed);
  cuda::DeviceBuffer a_, b_, c_;
  std::vector<std::uint8_t> host_a_, host_b_;  // the inputs as uploaded, for the reference
};

// cuBLAS / cuBLASLt status to an exception: NOT_SUPPORTED becomes Unsupported (`skipped`).
void check_cublas(int status, const char* what, const char* status_text);

}  // namespace opmeter::gemm
