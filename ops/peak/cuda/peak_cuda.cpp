// impl `cuda` of peak: fp32 FMA throughput of every SM. The tensor-core ceilings of the other
// dtypes are their best GEMMs (see Ceilings).
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "ops/peak/cuda/peak_kernel.hpp"
#include "ops/peak/peak.hpp"
#include "src/cuda/plugin/device.hpp"

namespace opmeter::peak {
namespace {
constexpr std::size_t kThreadsTotal = gpu::kBlocks * gpu::kThreads;

// What every thread's chain sum is, by the same fp32 recurrence (FMA is exactly rounded on both).
float expected_sum() {
  float sum = 0;
  for (int j = 0; j < gpu::kChains; ++j) {
    float x = 0.01f * static_cast<float>(j);
    for (int i = 0; i < gpu::kIters; ++i) x = std::fmaf(x, kFmaA, kFmaB);
    sum += x;
  }
  return sum;
}

class CudaPeak : public Impl {
 public:
  void setup(const Case& c, const SetupOptions&) override {
    stream_ = cuda::stream(c.cuda_index());
    out_ = cuda::DeviceBuffer(kThreadsTotal * sizeof(float));
  }
  void run(std::size_t) override {
    launch_fma_peak(static_cast<float*>(out_.data()), false, stream_);
    cuda::check(cudaGetLastError(), "FMA peak launch");
  }
  void sync() override { cuda::check(cudaStreamSynchronize(stream_), "FMA peak kernel"); }

  Check verify(std::uint64_t) override {
    cuda::check(cudaMemset(out_.data(), 0xff, out_.bytes()), "poison");
    launch_fma_peak(static_cast<float*>(out_.data()), true, stream_);
    sync();
    std::vector<float> got(kThreadsTotal);
    cuda::check(cudaMemcpy(got.data(), out_.data(), out_.bytes(), cudaMemcpyDeviceToHost), "download");
    const float want = expected_sum();
    std::size_t wrong = 0;
    for (float x : got) wrong += x != want;
    Check check;
    check.tolerance = 0;
    check.max_error = static_cast<double>(wrong) / static_cast<double>(got.size());
    check.ok = wrong == 0;
    check.detail = fmt::format("{} of {} threads' chain sums differ from {}", wrong, got.size(), want);
    return check;
  }

  std::map<std::string, std::string> details() const override {
    return {{"kernel", fmt::format("{} blocks x {} threads x {} fp32 FMA chains x {} iterations", gpu::kBlocks, gpu::kThreads,
                                   gpu::kChains, gpu::kIters)}};
  }

 private:
  cudaStream_t stream_ = nullptr;
  cuda::DeviceBuffer out_;
};

cuda::FactoryRegistrar reg({
    .op = "peak",
    .impl = "cuda",
    .supports =
        [](const Case&, const cuda::DeviceProps& p) {
          if (p.cc() < 80) return Support::no("opmeter's CUDA kernels are built for compute capability 8.0 and newer");
          return Support::yes();
        },
    .make = [] { return std::make_unique<CudaPeak>(); },
});

}  // namespace
}  // namespace opmeter::peak
