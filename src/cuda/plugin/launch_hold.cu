#include "cuda/plugin/launch_hold.hpp"

#include <fmt/format.h>

namespace opmeter::cuda {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold(const volatile int* release, int* timed_out, unsigned long long timeout_ns) {
  unsigned long long t0 = global_ns();
  while (*release == 0) {
    if (global_ns() - t0 > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

}  // namespace

std::string launch_hold(const volatile int* release, int* timed_out, unsigned long long timeout_ns, cudaStream_t s) {
  // Asked first, so that a GPU without the kernel's code leaves no launch error behind.
  cudaFuncAttributes attributes{};
  if (cudaError_t e = cudaFuncGetAttributes(&attributes, hold); e != cudaSuccess) {
    cudaGetLastError();
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    return fmt::format("no hold kernel for sm_{}{}: {}", major, minor, cudaGetErrorString(e));
  }
  hold<<<1, 1, 0, s>>>(release, timed_out, timeout_ns);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return fmt::format("hold kernel launch failed: {}", cudaGetErrorString(e));
  return "";
}

}  // namespace opmeter::cuda
