// cublaslt_fp8_train's amax, scale and (transpose-and-)quantize kernels (fp8_train_kernels.hpp).
// Blocks of 32 x 8 threads over 32 x 64 tiles: a warp reads 64 consecutive bf16 of a row (cols is
// even: the case's sizes are multiples of 16); the transposed codes go through shared memory so
// that their writes are row-contiguous too.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <utility>

#include "opmeter/cuda/device.hpp"
#include "opmeter/cuda/reduce.cuh"
#include "ops/linear/cuda/fp8_train_kernels.hpp"

namespace opmeter::linear::fp8_cuda {
namespace {
// Tiles of 32 rows x 64 columns (a warp reads a 128-byte row segment as bf16 pairs), 8 rows per pass.
constexpr int kTile = 32, kTileCols = 64, kRowsPerPass = 8;

// amax >= 0: its bit pattern orders as an int's, so atomicMax on ints is a max on floats (a NaN's
// pattern is above inf's: a NaN anywhere makes the amax NaN, and its scale 1).
__device__ void atomic_max_nonnegative(float* at, float v) { atomicMax(reinterpret_cast<int*>(at), __float_as_int(v)); }

// The larger of two magnitudes (sign bits clear), a NaN winning, by the same ordering.
__device__ float amax_of(float a, float b) { return __int_as_float(max(__float_as_int(a), __float_as_int(b))); }

// amax_of as a reduction (not cuda::MaxOp: fmaxf would drop a NaN).
struct AmaxOp {
  __device__ float operator()(float a, float b) const { return amax_of(a, b); }
};

__device__ float warp_max(float v) { return cuda::group_reduce<32>(v, AmaxOp{}); }

// A pair of adjacent bf16 of row r at column c (even; cols even) as floats; zeros outside.
__device__ float2 load_pair(const __nv_bfloat16* src, std::int64_t r, std::int64_t c, std::int64_t rows,
                            std::int64_t cols) {
  if (r >= rows || c >= cols) return make_float2(0.f, 0.f);
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(src + r * cols + c));
}

// One 32 x 64 tile per block: thread (x, y) reads columns 2x, 2x + 1 of rows y, y + 8, ...
__global__ void __launch_bounds__(kTile* kRowsPerPass)
    reduce_kernel(const __nv_bfloat16* __restrict__ src, std::int64_t rows, std::int64_t cols, Reduce out) {
  __shared__ float col_max[kRowsPerPass][kTileCols], col_sum[kRowsPerPass][kTileCols];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * kTile;
  const std::int64_t c = std::int64_t(blockIdx.y) * kTileCols + 2 * threadIdx.x;
  float cmax0 = 0.f, cmax1 = 0.f, csum0 = 0.f, csum1 = 0.f;
#pragma unroll
  for (int j = 0; j < kTile / kRowsPerPass; ++j) {
    const std::int64_t r = r0 + threadIdx.y + j * kRowsPerPass;
    const float2 v = load_pair(src, r, c, rows, cols);
    const float a0 = fabsf(v.x), a1 = fabsf(v.y);
    cmax0 = amax_of(cmax0, a0);
    cmax1 = amax_of(cmax1, a1);
    csum0 += v.x;
    csum1 += v.y;
    if (out.row_amax && r < rows) {  // r is the warp's (threadIdx.y): a whole-warp reduction
      const float m = warp_max(amax_of(a0, a1));
      if (threadIdx.x == 0) atomic_max_nonnegative(out.row_amax + r, m);
    }
  }
  col_max[threadIdx.y][2 * threadIdx.x] = cmax0;
  col_max[threadIdx.y][2 * threadIdx.x + 1] = cmax1;
  col_sum[threadIdx.y][2 * threadIdx.x] = csum0;
  col_sum[threadIdx.y][2 * threadIdx.x + 1] = csum1;
  __syncthreads();
  if (threadIdx.y != 0) return;  // the first warp finishes the tile's columns
#pragma unroll
  for (int i = 1; i < kRowsPerPass; ++i) {
    cmax0 = amax_of(cmax0, col_max[i][2 * threadIdx.x]);
    cmax1 = amax_of(cmax1, col_max[i][2 * threadIdx.x + 1]);
    csum0 += col_sum[i][2 * threadIdx.x];
    csum1 += col_sum[i][2 * threadIdx.x + 1];
  }
  if (c < cols && out.col_amax) {
    atomic_max_nonnegative(out.col_amax + c, cmax0);
    atomic_max_nonnegative(out.col_amax + c + 1, cmax1);
  }
  if (c < cols && out.col_sum) {
    atomicAdd(out.col_sum + c, csum0);
    atomicAdd(out.col_sum + c + 1, csum1);
  }
  if (out.tensor_amax) {
    const float m = warp_max(amax_of(cmax0, cmax1));  // the tile's, from its columns (0 past the last one)
    if (threadIdx.x == 0) atomic_max_nonnegative(out.tensor_amax, m);
  }
}

__global__ void scales_kernel(float* scale, std::int64_t n, float max_finite) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    scale[i] = scale_from_amax(scale[i], max_finite);
}

template <__nv_fp8_interpretation_t Kind>
__device__ std::uint8_t encode(float v, float scale) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(v / scale, __NV_SATFINITE, Kind));
}

template <__nv_fp8_interpretation_t Kind>
__global__ void __launch_bounds__(kTile* kRowsPerPass)
    quantize_kernel(const __nv_bfloat16* __restrict__ src, Quantize q) {
  __shared__ float tile[kTile][kTileCols + 1];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * kTile, c0 = std::int64_t(blockIdx.y) * kTileCols;
  const std::int64_t c = c0 + 2 * threadIdx.x;
#pragma unroll
  for (int j = 0; j < kTile / kRowsPerPass; ++j) {
    const int i = threadIdx.y + j * kRowsPerPass;
    const std::int64_t r = r0 + i;
    const float2 v = load_pair(src, r, c, q.rows, q.cols);
    tile[i][2 * threadIdx.x] = v.x;
    tile[i][2 * threadIdx.x + 1] = v.y;
    if (q.codes && r < q.rows && c < q.cols) {
      const float s = q.row_scale[q.rowwise ? r : 0];
      const auto pair = static_cast<std::uint16_t>(encode<Kind>(v.x, s) | (encode<Kind>(v.y, s) << 8));
      *reinterpret_cast<std::uint16_t*>(q.codes + r * q.cols + c) = pair;  // little-endian: v.x first
    }
  }
  if (!q.codes_t) return;
  __syncthreads();
  // codes_t[ct, r] = src[r, ct]: this thread's row of the tile becomes one byte of each output row,
  // a warp's 32 bytes one contiguous run.
  const std::int64_t r = r0 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kTileCols / kRowsPerPass; ++j) {
    const int i = threadIdx.y + j * kRowsPerPass;
    const std::int64_t ct = c0 + i;
    if (ct < q.cols && r < q.rows)
      q.codes_t[ct * q.rows + r] = encode<Kind>(tile[threadIdx.x][i], q.col_scale[q.rowwise ? ct : 0]);
  }
}

dim3 tiles(std::int64_t rows, std::int64_t cols) {
  return dim3(static_cast<unsigned>((rows + kTile - 1) / kTile),
              static_cast<unsigned>((cols + kTileCols - 1) / kTileCols));
}
}  // namespace

void launch_reduce(const void* src, std::int64_t rows, std::int64_t cols, const Reduce& out, cudaStream_t s) {
  for (auto [p, n] :
       {std::pair{out.row_amax, rows}, {out.col_amax, cols}, {out.tensor_amax, std::int64_t{1}}, {out.col_sum, cols}})
    if (p) cuda::check(cudaMemsetAsync(p, 0, static_cast<std::size_t>(n) * sizeof(float), s), "cudaMemsetAsync");
  reduce_kernel<<<tiles(rows, cols), dim3(kTile, kRowsPerPass), 0, s>>>(static_cast<const __nv_bfloat16*>(src), rows,
                                                                        cols, out);
}

void launch_scales(float* amax_then_scale, std::int64_t n, float max_finite, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 1024));
  scales_kernel<<<blocks, 256, 0, s>>>(amax_then_scale, n, max_finite);
}

void launch_quantize(const Quantize& q, cudaStream_t s) {
  const auto* src = static_cast<const __nv_bfloat16*>(q.src);
  if (q.format == fp8_train::Format::e4m3)
    quantize_kernel<__NV_E4M3><<<tiles(q.rows, q.cols), dim3(kTile, kRowsPerPass), 0, s>>>(src, q);
  else quantize_kernel<__NV_E5M2><<<tiles(q.rows, q.cols), dim3(kTile, kRowsPerPass), 0, s>>>(src, q);
}

}  // namespace opmeter::linear::fp8_cuda
