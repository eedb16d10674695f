// impl `cuda`: the add spec's host inputs uploaded, one vectorized kernel (add_kernel.cu), the
// output brought back for the spec's check.
#include "ops/add/add.hpp"
#include "ops/add/cuda/add_kernel.hpp"
#include "src/cuda/plugin/device.hpp"

namespace opmeter::add {
namespace {

class CudaAdd : public Impl, public AddSpec {
 public:
  void setup(const Case& c, const SetupOptions& options) override {
    bind(c);
    stream_ = cuda::stream(c.device_index());
    a_ = cuda::DeviceBuffer(inputs()[kA].bytes());
    b_ = cuda::DeviceBuffer(inputs()[kB].bytes());
    c_ = cuda::DeviceBuffer(output().bytes());
    upload_inputs(*this, options.seed, io());
  }
  void run(std::size_t) override {
    launch_add(case_.dtype, a_.data(), b_.data(), c_.data(), static_cast<std::int64_t>(n_), stream_);
    cuda::check(cudaGetLastError(), "add kernel launch");
  }
  void sync() override { cuda::check(cudaStreamSynchronize(stream_), "add"); }
  Check verify(std::uint64_t seed) override {
    return verify_on_device(*this, seed, io(), [this] {
      run(0);
      sync();
    });
  }
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "grid-stride loop, 16-byte vector loads and stores, fp32 sum"}};
  }

 private:
  DeviceIo io() {
    return {.upload = [this](std::size_t i, const HostTensor& t) { cuda::upload((i == kA ? a_ : b_).data(), t.data(), t.bytes(), stream_); },
            .fill_output = [this](int byte) { cuda::fill(c_.data(), byte, c_.bytes(), stream_); },
            .download_output = [this](HostTensor& t) { cuda::download(t.data(), c_.data(), t.bytes(), stream_); }};
  }

  cudaStream_t stream_ = nullptr;
  cuda::DeviceBuffer a_, b_, c_;
};

cuda::FactoryRegistrar reg({
    .op = "add",
    .impl = "cuda",
    .supports =
        [](const Case&, const cuda::DeviceProps& p) {
          if (p.cc() < 80) return Support::no("opmeter's CUDA kernels are built for compute capability 8.0 and newer");
          return Support::yes();
        },
    .make = [] { return std::make_unique<CudaAdd>(); },
});

}  // namespace
}  // namespace opmeter::add
