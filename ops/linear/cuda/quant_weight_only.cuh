#pragma once
// What cuda_quant's two weight-only kernels share (quant_weight_only_sm80.cu for 64-row tiles,
// quant_weight_only_decode_sm80.cu for M <= 16): the mma.sync m16n8k16 step and the decoding of a
// lane's 16-byte unit of codes (gpu_pack's layout) into its B fragments, exactly.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "ops/linear/cuda/quant_kernels.hpp"
#include "ops/linear/quant_gpu_decode.hpp"

namespace opmeter::linear::quant_cuda::wo {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileN = 8;

__device__ inline std::uint32_t bits(__nv_bfloat162 h) { return *reinterpret_cast<std::uint32_t*>(&h); }
__device__ inline std::uint32_t bits(__half2 h) { return *reinterpret_cast<std::uint32_t*>(&h); }
__device__ inline __nv_bfloat162 as_bf162(std::uint32_t v) { return *reinterpret_cast<__nv_bfloat162*>(&v); }
__device__ inline __half2 as_half2(std::uint32_t v) { return *reinterpret_cast<__half2*>(&v); }

// D += A B for one m16n8k16 tile (A row-major 16x16, B "col" 16x8), fp32 accumulators.
template <class T>
__device__ inline void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// lop3.b32 with b an immediate and c a register (gpu_decode::lop3 on the CPU): one LOP3 where an
// and and an or of two constants take two. c comes in a register the compiler may keep for the loop.
template <unsigned kLut, std::uint32_t kB>
__device__ inline std::uint32_t lop3(std::uint32_t a, std::uint32_t c) {
  std::uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(d) : "r"(a), "n"(kB), "r"(c), "n"(kLut));
  return d;
}

// Nibbles 0 and 4 of v (unsigned 0..15) as two T's plus kInt4Offset<T>: that power of two's
// exponent, 128 (bf16) or 1024 (fp16), with the nibble as low mantissa bits (exact).
template <class T>
constexpr float kInt4Offset = std::is_same_v<T, __nv_bfloat16> ? 128.f : 1024.f;
template <class T>
__device__ inline std::uint32_t int4_pair_offset(std::uint32_t v) {
  constexpr std::uint32_t e =
      std::is_same_v<T, __nv_bfloat16> ? gpu_decode::kBf16Exponent128 : gpu_decode::kHalfExponent1024;
  return lop3<gpu_decode::kLutAndOr, gpu_decode::kNibble0>(v, e);
}

// The same nibbles as two T's 0..15: the offset subtracted (exact).
template <class T>
__device__ inline std::uint32_t int4_pair(std::uint32_t v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return bits(__hsub2(as_bf162(int4_pair_offset<T>(v)), __float2bfloat162_rn(kInt4Offset<T>)));
  else
    return bits(__hsub2(as_half2(int4_pair_offset<T>(v)), __float2half2_rn(kInt4Offset<T>)));
}

// Bytes i, i + 1 of w (int8 codes + 128) as two T's holding the codes.
template <class T, int I>
__device__ inline std::uint32_t int8_pair(std::uint32_t w) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    // Bytes I, I + 1 to bits 0-7 and 16-23, then gpu_decode::int8_bf16_high - int8_bf16_low: the
    // code, exactly (4 instructions; 2^23 + u as floats minus 2^23 + 128, packed, took 5).
    constexpr std::uint32_t sel = 0x4040u | I | ((I + 1) << 8);
    const std::uint32_t spread = __byte_perm(w, 0u, sel);
    constexpr std::uint32_t e = gpu_decode::kBf16Exponent128;
    const std::uint32_t high = lop3<gpu_decode::kLutAndOr, gpu_decode::kInt8LowBits>(spread, e);
    const std::uint32_t low = lop3<gpu_decode::kLutAndNotOr, gpu_decode::kInt8TopBit>(spread, e);
    return bits(__hsub2(as_bf162(high), as_bf162(low)));
  } else {
    // 1024 + u as a half in each 16-bit lane, minus 1152.
    constexpr std::uint32_t sel = 0x4040u | I | ((I + 1) << 8);
    const std::uint32_t r = __byte_perm(w, 0x64u, sel);
    return bits(__hsub2(as_half2(r), __float2half2_rn(1152.f)));
  }
}

// Two e4m3 bytes (low 16 bits of v) as two T's (e4m3 values are exact in fp16 and bf16).
template <class T>
__device__ inline std::uint32_t fp8_pair(std::uint32_t v) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xFFFFu), __NV_E4M3);
  const __half2 h(raw);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return bits(__float22bfloat162_rn(__half22float2(h)));
  } else {
    return bits(h);
  }
}

// Step s of a lane's 16-byte unit to the B fragment (b0: k 2t, 2t+1; b1: k 2t+8, 2t+9); s is a
// constant once the caller's loop is unrolled.
template <class T, Codes C>
__device__ inline void decode(const std::uint32_t (&w)[4], int s, std::uint32_t& b0, std::uint32_t& b1) {
  if constexpr (C == Codes::int4) {
    const std::uint32_t v = w[s / 2] >> (8 * (s % 2));
    b0 = int4_pair<T>(v);
    b1 = int4_pair<T>(v >> 4);
  } else if constexpr (C == Codes::int8) {
    b0 = int8_pair<T, 0>(w[s]);
    b1 = int8_pair<T, 2>(w[s]);
  } else {
    b0 = fp8_pair<T>(w[s]);
    b1 = fp8_pair<T>(w[s] >> 16);
  }
}

__device__ inline std::uint32_t ld32(const void* p) { return *static_cast<const std::uint32_t*>(p); }

template <class T>
__device__ inline float half_bits_to_float(std::uint32_t h16) {
  const unsigned short b = static_cast<unsigned short>(h16 & 0xFFFFu);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __uint_as_float(static_cast<std::uint32_t>(b) << 16);
  } else {
    return __half2float(__ushort_as_half(b));
  }
}

// The decode kernel (M <= 16 rows a block; quant_weight_only_decode_sm80.cu).
void launch_decode(DType d, Codes c, const WeightOnlyArgs& a, cudaStream_t s);

}  // namespace opmeter::linear::quant_cuda::wo
