#pragma once
// OpenBLAS picks its kernels by the CPU it recognises; on a CPU newer than the library (0.3.21 on
// Emerald Rapids or Zen 5) it falls back to an older family, and its GEMM rows then show that
// fallback, not the machine. This says so where the rows are read.
#include <string>
#include <vector>

namespace opmeter {

// The vector ISA of OpenBLAS's kernel family `core` (openblas_get_corename(): "Prescott",
// "Haswell", "SkylakeX", ...) and of a CPU with these flags, as levels: 1 SSE, 2 AVX, 3 AVX2+FMA,
// 4 AVX-512. 0 for a core name this does not know.
int openblas_core_level(const std::string& core);
int cpu_vector_level(const std::vector<std::string>& flags);

// A note when the core's level is below the CPU's (e.g. "Prescott" on an AVX-512 CPU), naming the
// OPENBLAS_CORETYPE that would pick the CPU's own kernels; "" when it fits or the core is unknown.
std::string openblas_fallback_note(const std::string& core, const std::vector<std::string>& flags);

}  // namespace opmeter
