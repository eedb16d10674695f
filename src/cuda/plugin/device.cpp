#include "opmeter/cuda/device.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

namespace opmeter::cuda {
namespace {
std::mutex g_mutex;
}  // namespace

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

cudaStream_t stream(int device) {
  static std::map<int, cudaStream_t> streams;
  check(cudaSetDevice(device), "cudaSetDevice");
  std::lock_guard lock(g_mutex);
  auto& s = streams[device];
  if (!s) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

const DeviceProps& props(int device) {
  static std::map<int, DeviceProps> cache;
  std::lock_guard lock(g_mutex);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  DeviceProps p{};
  check(cudaGetDeviceProperties(&p.prop, device), "cudaGetDeviceProperties");
  check(cudaDeviceGetAttribute(&p.clock_khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute(clock)");
  check(cudaDeviceGetAttribute(&p.mem_clock_khz, cudaDevAttrMemoryClockRate, device), "cudaDeviceGetAttribute(memory clock)");
  return cache.emplace(device, p).first->second;
}

// CMakeLists.txt passes each group's CUDA_ARCHITECTURES (its one statement of them).
#ifndef OPMETER_CUDA_ARCHS_PLAIN
#error "CMakeLists.txt defines OPMETER_CUDA_ARCHS_PLAIN, _MMA and _SM90A for the CUDA plugin"
#endif

const BuiltArchs& built_archs(Kernels k) {
  static const BuiltArchs plain = parse_cuda_architectures(OPMETER_CUDA_ARCHS_PLAIN);
  static const BuiltArchs mma = parse_cuda_architectures(OPMETER_CUDA_ARCHS_MMA);
  static const BuiltArchs sm90a = parse_cuda_architectures(OPMETER_CUDA_ARCHS_SM90A);
  switch (k) {
    case Kernels::plain: return plain;
    case Kernels::mma:
    case Kernels::fp8_mma: return mma;
    case Kernels::wgmma: return sm90a;
  }
  return plain;
}

Support own_kernels_run_on(const DeviceProps& p, Kernels k) { return kernel_runs_on(needs_of(k), built_archs(k), p.cc()); }

namespace {
struct MemoryCount {
  std::size_t live = 0, peak = 0, at_mark = 0;
};
std::map<int, MemoryCount>& memory_counts() {
  static std::map<int, MemoryCount> counts;
  return counts;
}
void count_allocation(int device, std::size_t bytes) {
  std::lock_guard lock(g_mutex);
  auto& m = memory_counts()[device];
  m.live += bytes;
  m.peak = std::max(m.peak, m.live);
}
void count_free(int device, std::size_t bytes) {
  std::lock_guard lock(g_mutex);
  memory_counts()[device].live -= bytes;
}
}  // namespace

void mark_memory(int device) {
  std::lock_guard lock(g_mutex);
  auto& m = memory_counts()[device];
  m.peak = m.at_mark = m.live;
}

std::size_t memory_peak(int device) {
  std::lock_guard lock(g_mutex);
  auto& m = memory_counts()[device];
  return m.peak - m.at_mark;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, bool counted) : bytes_(bytes), counted_(counted) {
  if (bytes == 0) return;
  check(cudaGetDevice(&device_), "cudaGetDevice");
  if (cudaMalloc(&p_, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error
    p_ = nullptr;
    bytes_ = 0;
    throw std::bad_alloc();
  }
  if (counted_) count_allocation(device_, bytes_);
}

DeviceBuffer::~DeviceBuffer() {
  if (!p_) return;
  cudaFree(p_);
  if (counted_) count_free(device_, bytes_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) {
      cudaFree(p_);
      if (counted_) count_free(device_, bytes_);
    }
    p_ = o.p_;
    bytes_ = o.bytes_;
    device_ = o.device_;
    counted_ = o.counted_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer copy_of(const DeviceBuffer& src, cudaStream_t s) {
  DeviceBuffer copy(src.bytes());
  if (src.bytes() > 0) check(cudaMemcpyAsync(copy.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, s), "device copy");
  return copy;
}

void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "upload");
  check(cudaStreamSynchronize(s), "upload");
}

void download(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), "download");
  check(cudaStreamSynchronize(s), "download");
}

void fill(void* dst, int byte, std::size_t bytes, cudaStream_t s) {
  check(cudaMemsetAsync(dst, byte, bytes, s), "fill");
  check(cudaStreamSynchronize(s), "fill");
}

}  // namespace opmeter::cuda
