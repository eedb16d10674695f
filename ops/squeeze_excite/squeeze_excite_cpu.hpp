#pragma once
// opmeter's CPU squeeze-excite, per sample inside one OpenMP region: the channel means (one
// vectorized sweep per plane), the two small FCs in fp32, then each plane scaled by its gate.
// Both sweeps split the planes among the threads the same way (static schedule), so a thread
// finds the planes it summed still in its own cache when it scales them.
#include <cstddef>

#include "ops/squeeze_excite/squeeze_excite.hpp"

namespace opmeter::squeeze_excite {

struct CpuArgs {
  bool bf16 = false;  // x and y in bf16 (else fp32); parameters are fp32
  const void* x = nullptr;
  void* y = nullptr;
  const float *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *b2 = nullptr;
  Shape shape{};
};

// Floats of scratch run() needs: one sample's means, hidden values and gates.
std::size_t cpu_scratch_floats(const Shape& s);
void run_cpu(const CpuArgs& a, float* scratch);

// Sum of a plane of n values (fp32 or bf16 storage), vectorized for the CPU it runs on.
float plane_sum(bool bf16, const void* x, std::size_t n);

}  // namespace opmeter::squeeze_excite
