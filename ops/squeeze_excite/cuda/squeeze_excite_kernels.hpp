#pragma once
// opmeter's CUDA squeeze-excite, three kernels on one stream:
//   means   a block per (n, c) plane: the plane's sum (16-byte loads where H*W keeps every plane
//           16-byte aligned), fp32, into means[n * C + c];
//   gates   a block per sample: its means and the hidden values in shared memory, a warp per
//           hidden value (W1 row . means), then a thread per channel (W2 row . hidden) and the gate;
//   scale   grid-stride over the elements, y = x * gate of the element's plane.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::squeeze_excite {

struct DeviceArgs {
  const void* x = nullptr;
  void* y = nullptr;
  const float *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *b2 = nullptr;
  float* means = nullptr;  // n * c floats of scratch
  float* gates = nullptr;  // n * c floats of scratch
  std::int64_t n = 0, c = 0, hw = 0, r = 0;
  bool silu = false;         // act: silu, else relu
  bool hardsigmoid = false;  // gate: hardsigmoid, else sigmoid
};

// Shared memory of the gates kernel: one sample's means and hidden values.
std::size_t gates_shared_bytes(std::int64_t c, std::int64_t r);
// Throws std::runtime_error on a launch error.
void launch_squeeze_excite(DType d, const DeviceArgs& a, int sms, cudaStream_t s);

}  // namespace opmeter::squeeze_excite
