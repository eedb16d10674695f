#pragma once
// 16 bf16 values (bits) widened to fp32, for kernels compiled with AVX-512 (exact: bf16 is fp32's
// upper half). The zero-masked intrinsics: GCC 12's plain ones read an undefined register and
// warn (a false positive).
#include <immintrin.h>

namespace opmeter::tensor {

inline __m512 bf16x16(const void* p) {
  const __m512i wide = _mm512_maskz_cvtepu16_epi32(0xffff, _mm256_loadu_si256(static_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, wide, 16));
}

}  // namespace opmeter::tensor
