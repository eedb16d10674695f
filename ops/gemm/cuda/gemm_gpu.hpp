#pragma once
// What the CUDA GEMM impls share: the GEMM spec (gemm.hpp: layout, types, inputs, tolerance and
// check) with A, B and C in device memory. Inputs are the spec's host inputs, uploaded; the
// check downloads C and hands it to the spec.
#include <cstdint>

#include "ops/gemm/gemm.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::gemm {

class GpuGemm : public Impl, public GemmSpec {
 public:
  void setup(const Case& c, const SetupOptions& options) override;
  void sync() override;
  Check verify(std::uint64_t seed) override;

 protected:
  virtual void prepare() {}  // handles, descriptors, algorithm choice (inputs are on the device)
  void* a() const { return a_.data(); }
  void* b() const { return b_.data(); }
  void* c() const { return c_.data(); }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;

 private:
  DeviceIo io();
  cuda::DeviceBuffer a_, b_, c_;
};

// cuBLAS / cuBLASLt status to an exception: NOT_SUPPORTED becomes Unsupported (`skipped`).
void check_cublas(int status, const char* what, const char* status_text);

}  // namespace opmeter::gemm
