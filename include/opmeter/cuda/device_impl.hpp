#pragma once
// A CUDA impl of any op with a spec: one device buffer per input tensor of the spec and one for
// its output, the spec's host inputs uploaded at setup, and the check through the spec on the
// output brought back (verify_on_device). Derive from DeviceImpl<TheOpSpec> and implement
// launch(): enqueue the op's kernels on stream() reading in(i) and writing out().
//
//   class CudaGelu : public cuda::DeviceImpl<activation::ActivationOp> {
//     void launch() override { gelu<<<grid, block, 0, stream()>>>(in(0), out(), n); }
//   };
#include <cstddef>
#include <cstdint>
#include <vector>

#include "opmeter/op_spec.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::cuda {

template <class Spec>
class DeviceImpl : public Impl, public Spec {
 public:
  using Spec::Spec;
  void setup(const Case& c, const SetupOptions& options) override {
    this->bind(c);
    device_ = c.device_index();
    stream_ = cuda::stream(device_);
    inputs_.clear();
    for (const TensorDesc& t : this->inputs()) inputs_.emplace_back(t.bytes());
    output_ = DeviceBuffer(this->output().bytes());
    upload_inputs(*this, options.seed, io());
    prepare();
  }
  void run(std::size_t) override {
    launch();
    check(cudaGetLastError(), "kernel launch");
  }
  void sync() override { check(cudaStreamSynchronize(stream_), "kernel"); }
  Check verify(std::uint64_t seed) override {
    return verify_on_device(*this, seed, io(), [this] {
      prepare();  // impls that transform inputs once (folded or reordered weights) see the new ones
      run(0);
      sync();
    });
  }

 protected:
  // Enqueues one call of the op on stream(); no synchronization.
  virtual void launch() = 0;
  // After the inputs are on the device: in setup and again before each check (handles, plans,
  // transformed weights).
  virtual void prepare() {}

  void* in(std::size_t i) const { return inputs_.at(i).data(); }
  void* out() const { return output_.data(); }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

 private:
  DeviceIo io() {
    return {.upload = [this](std::size_t i, const HostTensor& t) { upload(inputs_.at(i).data(), t.data(), t.bytes(), stream_); },
            .fill_output = [this](int byte) { fill(output_.data(), byte, output_.bytes(), stream_); },
            .download_output = [this](HostTensor& t) { download(t.data(), output_.data(), t.bytes(), stream_); }};
  }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::vector<DeviceBuffer> inputs_;
  DeviceBuffer output_;
};

}  // namespace opmeter::cuda
