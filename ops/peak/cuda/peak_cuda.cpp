// impl `cuda` of peak: the GPU's own ceilings. kernel=fma: fp32 FMA chains on the CUDA cores;
// kernel=mma: mma.sync tensor-core chains (tf32, fp16, bf16, int8 on 8.0+, fp8 on 8.9+);
// kernel=wgmma: Hopper warpgroup MMA (9.0 only), the H100's full tensor rate.
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "ops/peak/cuda/peak_kernel.hpp"
#include "ops/peak/peak.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::peak {
namespace {

// What every thread's chain sum is, by the same fp32 recurrence (FMA is exactly rounded on both).
float expected_fma_sum() {
  float sum = 0;
  for (int j = 0; j < gpu::kChains; ++j) {
    float x = 0.01f * static_cast<float>(j);
    for (int i = 0; i < gpu::kIters; ++i) x = std::fmaf(x, kFmaA, kFmaB);
    sum += x;
  }
  return sum;
}

template <typename T>
std::uint32_t bits_of(T v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Each instruction adds K (or -K for the floats' 4th of every 4) to every accumulator element;
// the values are small integers, so the host's arithmetic is the device's, exactly.
template <typename Acc>
std::uint32_t expected_tensor_sum(DType d, gpu::Kind k) {
  const Acc kk = static_cast<Acc>(gpu::mma_k(d));
  const Acc last = d == DType::int8 ? kk : -kk;
  Acc sum = 0;
  if (k == gpu::Kind::mma) {
    for (int j = 0; j < gpu::kMmaChains; ++j) {
      Acc x = static_cast<Acc>(j);
      for (int i = 0; i < gpu::kMmaIters; ++i) x = x + kk + kk + kk + last;
      sum += 4 * x;  // four accumulator elements per thread per chain
    }
  } else {
    Acc x = 0;
    for (int g = 0; g < gpu::kWgGroups; ++g) x = x + kk + kk + kk + last;
    sum = 128 * x;  // m64n256: 128 accumulator elements per thread
  }
  return bits_of(sum);
}

const char* mma_shape(DType d) {
  switch (d) {
    case DType::tf32: return "m16n8k8 f32.tf32.tf32.f32";
    case DType::fp16: return "m16n8k16 f32.f16.f16.f32";
    case DType::bf16: return "m16n8k16 f32.bf16.bf16.f32";
    case DType::fp8_e4m3: return "m16n8k32 f32.e4m3.e4m3.f32";
    default: return "m16n8k32 s32.s8.s8.s32";
  }
}
const char* wgmma_shape(DType d) {
  switch (d) {
    case DType::tf32: return "m64n256k8 f32.tf32.tf32";
    case DType::fp16: return "m64n256k16 f32.f16.f16";
    case DType::bf16: return "m64n256k16 f32.bf16.bf16";
    case DType::fp8_e4m3: return "m64n256k32 f32.e4m3.e4m3";
    default: return "m64n256k32 s32.s8.s8";
  }
}

class CudaPeak : public Impl {
 public:
  void setup(const Case& c, const SetupOptions&) override {
    dtype_ = c.dtype;
    kind_ = *gpu::parse_kind(c.get("kernel"));  // validated when the case was read
    stream_ = cuda::stream(c.device_index());
    const std::size_t threads = kind_ == gpu::Kind::fma   ? gpu::kBlocks * gpu::kThreads
                                : kind_ == gpu::Kind::mma ? gpu::kMmaThreads
                                                          : gpu::kWgThreadsTotal;
    out_ = cuda::DeviceBuffer(threads * sizeof(std::uint32_t));
    if (kind_ == gpu::Kind::wgmma) resident_ = wgmma_blocks_per_sm(dtype_);
  }
  void run(std::size_t) override { launch(false); }
  void sync() override { cuda::check(cudaStreamSynchronize(stream_), "peak kernel"); }

  Check verify(std::uint64_t) override {
    // Everything on the impl's stream: the poison, the launch that writes every thread's sum,
    // the download.
    cuda::check(cudaMemsetAsync(out_.data(), 0xff, out_.bytes(), stream_), "poison");
    launch(true);
    std::vector<std::uint32_t> got(out_.bytes() / sizeof(std::uint32_t));
    cuda::check(cudaMemcpyAsync(got.data(), out_.data(), out_.bytes(), cudaMemcpyDeviceToHost, stream_), "download");
    sync();
    const std::uint32_t want = kind_ == gpu::Kind::fma  ? bits_of(expected_fma_sum())
                               : dtype_ == DType::int8 ? expected_tensor_sum<std::int32_t>(dtype_, kind_)
                                                       : expected_tensor_sum<float>(dtype_, kind_);
    std::size_t wrong = 0;
    std::uint32_t first_wrong = want;
    for (auto x : got)
      if (x != want) first_wrong = wrong++ ? first_wrong : x;
    Check check;
    check.tolerance = 0;
    check.max_error = static_cast<double>(wrong) / static_cast<double>(got.size());
    check.ok = wrong == 0;
    check.detail = fmt::format("{} of {} threads' checksums differ from {} (first wrong: {})", wrong, got.size(),
                               show(want), show(first_wrong));
    return check;
  }

  std::map<std::string, std::string> details() const override {
    switch (kind_) {
      case gpu::Kind::fma:
        return {{"kernel", fmt::format("{} blocks x {} threads x {} fp32 FMA chains x {} iterations", gpu::kBlocks,
                                       gpu::kThreads, gpu::kChains, gpu::kIters)}};
      case gpu::Kind::mma:
        return {{"kernel", fmt::format("mma.sync {}, {} blocks x {} warps x {} chains x {} instructions", mma_shape(dtype_),
                                       gpu::kMmaBlocks, gpu::kMmaWarps, gpu::kMmaChains, gpu::kMmaIters * gpu::kMmaPerIter)}};
      case gpu::Kind::wgmma:
        return {{"kernel", fmt::format("wgmma {} (A and B in shared memory), {} blocks of 1 warpgroup ({} resident per SM) "
                                       "x {} instructions, {} per commit group",
                                       wgmma_shape(dtype_), gpu::kWgBlocks, resident_, gpu::kWgGroups * gpu::kWgPerGroup,
                                       gpu::kWgPerGroup)}};
    }
    return {};
  }

 private:
  void launch(bool all) {
    auto* out = static_cast<std::uint32_t*>(out_.data());
    switch (kind_) {
      case gpu::Kind::fma:
        launch_fma_peak(static_cast<float*>(out_.data()), all, stream_);
        cuda::check(cudaGetLastError(), "FMA peak launch");
        break;
      case gpu::Kind::mma: cuda::check(launch_mma_peak(dtype_, out, all, stream_), "mma peak launch"); break;
      case gpu::Kind::wgmma: cuda::check(launch_wgmma_peak(dtype_, out, all, stream_), "wgmma peak launch"); break;
    }
  }
  std::string show(std::uint32_t bits) const {
    if (kind_ != gpu::Kind::fma && dtype_ == DType::int8) return fmt::format("{}", static_cast<std::int32_t>(bits));
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return fmt::format("{}", f);
  }

  DType dtype_ = DType::fp32;
  gpu::Kind kind_ = gpu::Kind::fma;
  int resident_ = 0;
  cudaStream_t stream_ = nullptr;
  cuda::DeviceBuffer out_;
};

}  // namespace

// The plugin's half of this impl, named by its declaration in peak_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = [](const Case& c, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p, cuda_kernels(c)); },
      .make = [] { return std::make_unique<CudaPeak>(); },
  };
}

}  // namespace opmeter::peak
