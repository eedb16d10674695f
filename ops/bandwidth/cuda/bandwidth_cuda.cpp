// impl `cuda` of bandwidth: STREAM's kernels on the GPU with 16-byte accesses (same accounting as
// the CPU's: bytes read + written, no write-allocate).
#include <fmt/format.h>

#include <algorithm>

#include "ops/bandwidth/bandwidth.hpp"
#include "ops/bandwidth/cuda/bandwidth_kernels.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::bandwidth {
namespace {

class CudaBandwidth : public Impl {
 public:
  void setup(const Case& c, const SetupOptions& options) override {
    spec_ = *parse_kernel(c.get("kernel"));
    n_ = static_cast<std::size_t>(c.get_int("n"));
    int device = c.device_index();
    stream_ = cuda::stream(device);
    std::size_t tiles = (n_ / 4 + kVectorsPerThread * kThreadsPerBlock - 1) / (kVectorsPerThread * kThreadsPerBlock);
    blocks_ = static_cast<int>(std::clamp<std::size_t>(tiles, 1, kMaxBlocks));
    arrays_.clear();
    for (int a = 0; a < spec_.arrays; ++a) arrays_.emplace_back(n_ * sizeof(float));
    partials_ = cuda::DeviceBuffer(static_cast<std::size_t>(blocks_) * sizeof(double));
    upload(check_inputs(spec_, n_, options.seed));
  }

  void run(std::size_t) override {
    auto p = [&](int i) { return static_cast<float*>(arrays_[static_cast<std::size_t>(i)].data()); };
    switch (spec_.kind) {
      case Kind::copy: launch_copy(p(0), p(1), n_, blocks_, stream_); break;
      case Kind::scale: launch_scale(p(0), p(1), kScalar, n_, blocks_, stream_); break;
      case Kind::add: launch_add(p(0), p(1), p(2), n_, blocks_, stream_); break;
      case Kind::triad: launch_triad(p(0), p(1), p(2), kScalar, n_, blocks_, stream_); break;
      case Kind::read: launch_read(p(0), static_cast<double*>(partials_.data()), n_, blocks_, stream_); break;
      case Kind::write: launch_write(p(0), kWriteValue, n_, blocks_, stream_); break;
    }
    cuda::check(cudaGetLastError(), "bandwidth kernel launch");
  }

  void sync() override { cuda::check(cudaStreamSynchronize(stream_), "bandwidth kernel"); }

  Check verify(std::uint64_t seed) override {
    auto inputs = check_inputs(spec_, n_, seed);
    upload(inputs);
    const int out_array = spec_.kind == Kind::read ? -1 : output_array(spec_);
    if (out_array >= 0)  // no kernel reads the array it writes: poison it so unwritten elements show
      cuda::fill(arrays_[static_cast<std::size_t>(out_array)].data(), 0xff, n_ * sizeof(float), stream_);
    if (spec_.kind == Kind::read) cuda::fill(partials_.data(), 0xff, partials_.bytes(), stream_);
    run(0);
    sync();
    if (spec_.kind == Kind::read) {
      std::vector<double> partials(static_cast<std::size_t>(blocks_));
      cuda::download(partials.data(), partials_.data(), partials.size() * sizeof(double), stream_);
      double got = 0;
      for (double x : partials) got += x;
      return check_sum(inputs[0], got);
    }
    std::vector<float> out(n_);
    cuda::download(out.data(), arrays_[static_cast<std::size_t>(out_array)].data(), n_ * sizeof(float), stream_);
    return check_output(spec_, inputs, out.data(), n_);
  }

  std::map<std::string, std::string> details() const override {
    return {{"kernel", fmt::format("{} x float4 per thread, {} blocks x {} threads",
                                   kVectorsPerThread, blocks_, kThreadsPerBlock)}};
  }

 private:
  void upload(const std::vector<std::vector<float>>& arrays) {
    for (std::size_t a = 0; a < arrays.size(); ++a)
      cuda::upload(arrays_[a].data(), arrays[a].data(), n_ * sizeof(float), stream_);
  }

  KernelSpec spec_{};
  std::size_t n_ = 0;
  int blocks_ = 1;
  cudaStream_t stream_ = nullptr;
  std::vector<cuda::DeviceBuffer> arrays_;
  cuda::DeviceBuffer partials_;
};

}  // namespace

// The plugin's half of this impl, named by its declaration in bandwidth_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports =
          [](const Case& c, const cuda::DeviceProps& p) {
            if (auto own = cuda::own_kernels_run_on(p); !own.ok) return own;
            if (parse_kernel(c.get("kernel"))->nt)
              return Support::no("non-temporal (_nt) kernels are CPU kernels; on CUDA use copy, scale, add, triad, read, write");
            return Support::yes();
          },
      .make = [] { return std::make_unique<CudaBandwidth>(); },
  };
}

}  // namespace opmeter::bandwidth
