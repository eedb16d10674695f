#pragma once
// A bf16 GEMV for a few rows (impl `opmeter_gemv`, decode): c[m * ldc + j] = sum_k x[m, k] W[j, k]
// for m < rows, j0 <= j < j1, x rows x hidden and W out x hidden in bf16 bits, fp32 sums.
// gemv_bf16_avx512.cpp; callable where the CPU has AVX512_BF16 (gemv_bf16_usable).
#include <cstddef>
#include <cstdint>

namespace opmeter::linear {

void gemv_bf16(const std::uint16_t* x, std::size_t rows, const std::uint16_t* w, std::size_t hidden, std::size_t j0,
               std::size_t j1, float* c, std::size_t ldc);
inline bool gemv_bf16_usable() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
}

}  // namespace opmeter::linear
