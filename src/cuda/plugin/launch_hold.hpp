#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/plugin/hold_detail.hpp"

namespace opmeter::cuda {
// Holds the stream until the host sets *release (host-mapped memory) to nonzero, or `timeout_ns`
// pass; then writes 1 to *timed_out if it gave up. Enqueued behind it, a sample's start event and
// calls begin together once the host has issued them all, so the host's launch cost (cuBLASLt
// spends ~10-20 us per call) stays out of the sample (nvbench's blocking kernel).
// Returns "" once the hold is enqueued; else why not (no machine code for this GPU, a launch
// error), with nothing enqueued and no error left pending: the caller's sample is then not held.
std::string launch_hold(const volatile int* release, int* timed_out, unsigned long long timeout_ns, cudaStream_t s);
}  // namespace opmeter::cuda
