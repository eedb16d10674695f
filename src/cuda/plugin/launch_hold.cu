#include "src/cuda/plugin/launch_hold.hpp"

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

void launch_hold(const volatile int* release, int* timed_out, unsigned long long timeout_ns, cudaStream_t s) {
  hold<<<1, 1, 0, s>>>(release, timed_out, timeout_ns);
}

}  // namespace opmeter::cuda
