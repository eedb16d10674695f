#pragma once
// Evicts a GPU's L2 before a cold sample by READING a buffer twice its size. Writing one (a
// memset, the usual way) leaves L2 full of dirty lines, and the sample then pays for writing
// them back to memory as its own reads evict them: up to an L2 of extra traffic in the timed
// calls (docs/BENCHMARKS.md, "A floor under every kernel here"). Read lines are clean.
#include <cuda_runtime.h>

#include <cstddef>

#include "opmeter/cuda/device.hpp"

namespace opmeter::cuda {

class L2Flush {
 public:
  explicit L2Flush(int device);  // reads twice the device's L2, at least 2 MiB
  // Enqueues the read on `s`.
  void enqueue(cudaStream_t s);
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_, sink_;  // sink_: written only on a value the buffer never holds
  unsigned blocks_ = 0;
};

}  // namespace opmeter::cuda
