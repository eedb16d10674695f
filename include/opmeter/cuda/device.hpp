#pragma once
// What every part of the CUDA plugin shares: error checks, one stream per device, device memory,
// device properties, and the plugin's own table of impls.
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/op.hpp"
#include "opmeter/cuda/factory.hpp"
#include "opmeter/cuda/kernel_gate.hpp"

namespace opmeter::cuda {

// Throws std::runtime_error("what: <CUDA error>") unless e is cudaSuccess.
void check(cudaError_t e, const char* what);

// Makes `device` current and returns its stream (created once, non-blocking).
cudaStream_t stream(int device);

struct DeviceProps {
  cudaDeviceProp prop;
  int clock_khz = 0;      // default (peak) SM clock
  int mem_clock_khz = 0;
  int cc() const { return prop.major * 10 + prop.minor; }
};
const DeviceProps& props(int device);  // read once per device

// What the plugin was built as for a group of kernels (CMakeLists.txt's lists).
const BuiltArchs& built_archs(Kernels k);
// Whether a group of opmeter's own kernels runs on a device; else `skipped` with why ("... needs
// compute capability 8.0 or newer; this GPU is sm_75", or "built for ...; this GPU is sm_110").
Support own_kernels_run_on(const DeviceProps& p, Kernels k = Kernels::plain);

// cudaMalloc'd memory (never managed), freed on destruction. Every buffer counts itself on its
// device, so a case's allocation high-water mark is known (mark_memory / memory_peak): library
// workspaces are DeviceBuffers for that reason.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `counted` false: opmeter's own measuring memory (the L2 flush buffer), not the case's.
  explicit DeviceBuffer(std::size_t bytes, bool counted = true);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_), device_(o.device_), counted_(o.counted_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* data() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
  bool counted_ = true;
};
// A new buffer holding `src`'s bytes, copied on `s` (ordered with the impl's work, not synchronized).
DeviceBuffer copy_of(const DeviceBuffer& src, cudaStream_t s);
// The most bytes DeviceBuffers held on `device` since mark_memory, above what they held then.
void mark_memory(int device);
std::size_t memory_peak(int device);

// Host<->device transfers ordered with the impl's work: each is enqueued on `s` and the stream is
// synchronized, so a check never reads or writes a buffer while a kernel on `s` still uses it.
void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t s);
void download(void* dst, const void* src, std::size_t bytes, cudaStream_t s);
void fill(void* dst, int byte, std::size_t bytes, cudaStream_t s);

// The impls the plugin (and the cuDNN module, once loaded) can make: their declarations
// (include/opmeter/cuda/cuda_impl.hpp) as compiled into this side, with their factories.
struct CudaImpl;
const CudaImpl* find_impl(const std::string& op, const std::string& impl);
std::vector<const CudaImpl*> plugin_impls();

}  // namespace opmeter::cuda
