#pragma once
// Device-side moves of kVec consecutive elements in one access (8 or 16 bytes), widened to fp32
// on the way in and rounded once on the way out (float_convert.cuh); kVec == 1: a plain access.
// The caller guarantees the alignment (p aligned to kVec * sizeof(T)). Stores are written in PTX:
// the compiler split plain vector stores inside unrolled loops into 4-byte ones.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::cuda {

__device__ inline std::uint32_t bits16(__half x) { return __half_as_ushort(x); }
__device__ inline std::uint32_t bits16(__nv_bfloat16 x) { return __bfloat16_as_ushort(x); }
template <class T>
__device__ T from_bits16(std::uint32_t b);
template <>
__device__ inline __half from_bits16<__half>(std::uint32_t b) {
  return __ushort_as_half(static_cast<unsigned short>(b));
}
template <>
__device__ inline __nv_bfloat16 from_bits16<__nv_bfloat16>(std::uint32_t b) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(b));
}

__device__ inline void store_words(void* p, std::uint32_t a, std::uint32_t b) {
  asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b) : "memory");
}
__device__ inline void store_words(void* p, std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// out[i] = widen(p[i]), i < kVec: fp32 kVec 4 (16 bytes); 16-bit types kVec 4 (8 bytes) or 8 (16).
template <int kVec, class T>
__device__ inline void load_widened(const T* p, float (&out)[kVec]) {
  if constexpr (kVec == 1) {
    out[0] = widen(*p);
  } else if constexpr (sizeof(T) == 4) {
    static_assert(kVec == 4);
    const float4 f = *reinterpret_cast<const float4*>(p);
    out[0] = f.x, out[1] = f.y, out[2] = f.z, out[3] = f.w;
  } else {
    static_assert(sizeof(T) == 2 && (kVec == 4 || kVec == 8));
    std::uint32_t w[kVec / 2];
    if constexpr (kVec == 4) {
      const uint2 r = *reinterpret_cast<const uint2*>(p);
      w[0] = r.x, w[1] = r.y;
    } else {
      const uint4 r = *reinterpret_cast<const uint4*>(p);
      w[0] = r.x, w[1] = r.y, w[2] = r.z, w[3] = r.w;
    }
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) {
      out[2 * i] = widen(from_bits16<T>(w[i] & 0xffffu));
      out[2 * i + 1] = widen(from_bits16<T>(w[i] >> 16));
    }
  }
}

// fp32 values as stored (gamma): kVec a multiple of 4 in float4 loads, or 1.
template <int kVec>
__device__ inline void load_floats(const float* p, float (&out)[kVec]) {
  if constexpr (kVec == 1) {
    out[0] = *p;
  } else {
    static_assert(kVec % 4 == 0);
#pragma unroll
    for (int i = 0; i < kVec / 4; ++i) {
      const float4 f = reinterpret_cast<const float4*>(p)[i];
      out[4 * i] = f.x, out[4 * i + 1] = f.y, out[4 * i + 2] = f.z, out[4 * i + 3] = f.w;
    }
  }
}

// p[i] = narrow<T>(v[i]), i < kVec, in one store (the shapes of load_widened).
template <int kVec, class T>
__device__ inline void store_narrowed(T* p, const float (&v)[kVec]) {
  if constexpr (kVec == 1) {
    *p = narrow<T>(v[0]);
  } else if constexpr (sizeof(T) == 4) {
    static_assert(kVec == 4);
    store_words(p, __float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
  } else {
    static_assert(sizeof(T) == 2 && (kVec == 4 || kVec == 8));
    std::uint32_t w[kVec / 2];
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) w[i] = bits16(narrow<T>(v[2 * i])) | (bits16(narrow<T>(v[2 * i + 1])) << 16);
    if constexpr (kVec == 4)
      store_words(p, w[0], w[1]);
    else
      store_words(p, w[0], w[1], w[2], w[3]);
  }
}

}  // namespace opmeter::cuda
