#pragma once
// What the CUDA GEMM impls share: the GEMM spec (gemm.hpp: layout, types, inputs, tolerance and
// check) with A, B and C in device memory. Inputs are the spec's host inputs, uploaded; the
// check downloads C and hands it to the spec.
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/gemm/gemm.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::gemm {

class GpuGemm : public Impl, public GemmSpec {
 public:
  void setup(const Case& c, const SetupOptions& options) override;
  void sync() override;
  Check verify(std::uint64_t seed) override;
  // Every CUDA GEMM reads A and B through a() and b() after use(copy): copies of them rotate in
  // graph mode (C is shared).
  bool rotates_inputs(const Case&) const override { return true; }

 protected:
  virtual void prepare() {}  // handles, descriptors, algorithm choice (inputs are on the device)
  // The input set that a() and b() give until the next use(): run(copy) calls it first.
  void use(std::size_t copy) { set_ = copy <= copies_.size() ? copy : 0; }
  void* a() const { return set_ == 0 ? a_.data() : copies_[set_ - 1].first.data(); }
  void* b() const { return set_ == 0 ? b_.data() : copies_[set_ - 1].second.data(); }
  void* c() const { return c_.data(); }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;

 private:
  DeviceIo io();
  cuda::DeviceBuffer a_, b_, c_;
  std::vector<std::pair<cuda::DeviceBuffer, cuda::DeviceBuffer>> copies_;  // A and B of sets 1..
  std::size_t set_ = 0;
};

// cuBLAS / cuBLASLt status to an exception: NOT_SUPPORTED becomes Unsupported (`skipped`).
void check_cublas(int status, const char* what, const char* status_text);

}  // namespace opmeter::gemm
