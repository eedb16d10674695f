#pragma once
// A bf16 GEMV for a few rows (impl `opmeter_gemv`, decode): c[m * ldc + j] = sum_k x[m, k] W[j, k]
// for m < rows, j0 <= j < j1, x rows x hidden and W out x hidden in bf16 bits, fp32 sums.
// gemv_bf16 runs the best kernel of this CPU: AVX512_BF16's (gemv_bf16_avx512.cpp), else AVX2's
// (gemv_bf16_avx2.cpp); callable where gemv_bf16_usable.
#include <cstddef>
#include <cstdint>

namespace opmeter::linear {

void gemv_bf16_avx512(const std::uint16_t* x, std::size_t rows, const std::uint16_t* w, std::size_t hidden, std::size_t j0,
                      std::size_t j1, float* c, std::size_t ldc);
void gemv_bf16_avx2(const std::uint16_t* x, std::size_t rows, const std::uint16_t* w, std::size_t hidden, std::size_t j0,
                    std::size_t j1, float* c, std::size_t ldc);
inline bool gemv_bf16_avx512_usable() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
}
inline bool gemv_bf16_avx2_usable() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
inline bool gemv_bf16_usable() { return gemv_bf16_avx512_usable() || gemv_bf16_avx2_usable(); }
inline void gemv_bf16(const std::uint16_t* x, std::size_t rows, const std::uint16_t* w, std::size_t hidden, std::size_t j0,
                      std::size_t j1, float* c, std::size_t ldc) {
  static const bool avx512 = gemv_bf16_avx512_usable();
  (avx512 ? gemv_bf16_avx512 : gemv_bf16_avx2)(x, rows, w, hidden, j0, j1, c, ldc);
}
// What gemv_bf16 runs here (details.kernel).
inline const char* gemv_bf16_kernel() {
  return gemv_bf16_avx512_usable() ? "bf16 GEMV: each channel's row of W streamed once for all rows, vdpbf16ps, fp32 sums"
                                   : "bf16 GEMV: each channel's row of W streamed once for all rows, bf16 widened to fp32 "
                                     "by shifts, FMA, fp32 sums";
}

}  // namespace opmeter::linear
