#pragma once
// A bf16 GEMV for a few rows (impl `opmeter_gemv`, decode): c[m * ldc + j] = sum_k x[m, k] W[j, k]
// for m < rows, j0 <= j < j1, x rows x hidden and W out x hidden in bf16 bits, fp32 sums.
// gemv_bf16 runs the best kernel of this CPU: AVX512_BF16's (gemv_bf16_avx512.cpp), else AVX2's
// (gemv_bf16_avx2.cpp); callable where gemv_bf16_usable.
#include <cstddef>
#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::linear {

void gemv_bf16_avx512(const std::uint16_t* x, std::size_t rows, const std::uint16_t* w, std::size_t hidden,
                      std::size_t j0, std::size_t j1, float* c, std::size_t ldc);
// xp: x as gemv_bf16_x_for_avx2 orders it (the bf16 rows x for hidden's tail past a multiple of 16).
void gemv_bf16_avx2(const std::uint16_t* x, const float* xp, std::size_t rows, const std::uint16_t* w,
                    std::size_t hidden, std::size_t j0, std::size_t j1, float* c, std::size_t ldc);
inline bool gemv_bf16_avx512_usable() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512bf16");
}
inline bool gemv_bf16_avx2_usable() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
inline bool gemv_bf16_usable() { return gemv_bf16_avx512_usable() || gemv_bf16_avx2_usable(); }
// x (rows x hidden bf16) as fp32 in the AVX2 kernel's order, into xp (rows x hidden): per 16
// values the 8 even ones, then the 8 odd ones (the tail past a multiple of 16 is not used).
inline void gemv_bf16_x_for_avx2(const std::uint16_t* x, std::size_t rows, std::size_t hidden, float* xp) {
  for (std::size_t m = 0; m < rows; ++m)
    for (std::size_t k = 0; k + 16 <= hidden; k += 16)
      for (std::size_t i = 0; i < 8; ++i) {
        xp[m * hidden + k + i] = from_bf16(x[m * hidden + k + 2 * i]);
        xp[m * hidden + k + 8 + i] = from_bf16(x[m * hidden + k + 2 * i + 1]);
      }
}
// The best kernel here; xp: x prepared by gemv_bf16_x_for_avx2 (read only by the AVX2 kernel), so
// that a layer's calls, one per block of channels, prepare it once.
inline void gemv_bf16(const std::uint16_t* x, const float* xp, std::size_t rows, const std::uint16_t* w,
                      std::size_t hidden, std::size_t j0, std::size_t j1, float* c, std::size_t ldc) {
  static const bool avx512 = gemv_bf16_avx512_usable();
  if (avx512) gemv_bf16_avx512(x, rows, w, hidden, j0, j1, c, ldc);
  else gemv_bf16_avx2(x, xp, rows, w, hidden, j0, j1, c, ldc);
}
// What gemv_bf16 runs here (details.kernel).
inline const char* gemv_bf16_kernel() {
  return gemv_bf16_avx512_usable()
             ? "bf16 GEMV: each channel's row of W streamed once for all rows, vdpbf16ps, fp32 sums"
             : "bf16 GEMV: each channel's row of W streamed once for all rows, bf16 widened to fp32 "
               "by shifts, FMA, fp32 sums";
}

}  // namespace opmeter::linear
