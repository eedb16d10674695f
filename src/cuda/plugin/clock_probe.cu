#include "src/cuda/plugin/clock_probe.hpp"

namespace opmeter::cuda {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Both readings come from the same SM within one thread, so clock64 is comparable.
__global__ void clock_probe(unsigned long long* out, unsigned long long spin_ns) {
  unsigned long long t0 = global_ns();
  long long c0 = clock64();
  unsigned long long t1 = t0;
  while (t1 - t0 < spin_ns) t1 = global_ns();
  long long c1 = clock64();
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = t1 - t0;
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

void launch_clock_probe(unsigned long long* out, unsigned long long spin_ns, cudaStream_t s) {
  clock_probe<<<1, 1, 0, s>>>(out, spin_ns);
}

}  // namespace opmeter::cuda
