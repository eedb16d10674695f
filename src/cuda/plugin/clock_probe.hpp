#pragma once
#include <cuda_runtime.h>

namespace opmeter::cuda {
// One thread spins for about `spin_ns` of the global timer and writes the SM cycles (clock64)
// and nanoseconds it saw to out[0] and out[1]: their ratio is the SM clock right then.
void launch_clock_probe(unsigned long long* out, unsigned long long spin_ns, cudaStream_t s);
}  // namespace opmeter::cuda
