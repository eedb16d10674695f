// cublaslt_fp8_train's amax, scale and (transpose-and-)quantize kernels (fp8_train_kernels.hpp).
// Blocks of 32 x 8 threads over 32 x 32 tiles: a warp reads 32 consecutive bf16 of a row; the
// transposed codes go through shared memory so that their writes are row-contiguous too.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <utility>

#include "ops/linear/cuda/fp8_train_kernels.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::linear::fp8_cuda {
namespace {
constexpr int kTile = 32, kRowsPerPass = 8;

// amax >= 0: its bit pattern orders as an int's, so atomicMax on ints is a max on floats (a NaN's
// pattern is above inf's: a NaN anywhere makes the amax NaN, and its scale 1).
__device__ void atomic_max_nonnegative(float* at, float v) { atomicMax(reinterpret_cast<int*>(at), __float_as_int(v)); }

// The larger of two magnitudes (sign bits clear), a NaN winning, by the same ordering.
__device__ float amax_of(float a, float b) { return __int_as_float(max(__float_as_int(a), __float_as_int(b))); }

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = amax_of(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__global__ void reduce_kernel(const __nv_bfloat16* __restrict__ src, std::int64_t rows, std::int64_t cols, Reduce out) {
  __shared__ float col_max[kRowsPerPass][kTile], col_sum[kRowsPerPass][kTile];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * kTile, c = std::int64_t(blockIdx.y) * kTile + threadIdx.x;
  float cmax = 0.f, csum = 0.f;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const std::int64_t r = r0 + i;
    const bool inside = r < rows && c < cols;
    const float v = inside ? __bfloat162float(src[r * cols + c]) : 0.f;
    const float a = fabsf(v);
    cmax = amax_of(cmax, a);
    csum += v;
    if (out.row_amax && r < rows) {
      const float m = warp_max(a);
      if (threadIdx.x == 0) atomic_max_nonnegative(out.row_amax + r, m);
    }
  }
  col_max[threadIdx.y][threadIdx.x] = cmax;
  col_sum[threadIdx.y][threadIdx.x] = csum;
  __syncthreads();
  if (threadIdx.y != 0) return;  // the first warp finishes the tile's columns
  for (int i = 1; i < kRowsPerPass; ++i) {
    cmax = amax_of(cmax, col_max[i][threadIdx.x]);
    csum += col_sum[i][threadIdx.x];
  }
  if (c < cols && out.col_amax) atomic_max_nonnegative(out.col_amax + c, cmax);
  if (c < cols && out.col_sum) atomicAdd(out.col_sum + c, csum);
  if (out.tensor_amax) {
    const float m = warp_max(cmax);  // the tile's, from its columns (0 past the last one)
    if (threadIdx.x == 0) atomic_max_nonnegative(out.tensor_amax, m);
  }
}

__global__ void scales_kernel(float* scale, std::int64_t n, float max_finite) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    scale[i] = fp8_train::scale_from_amax(scale[i], max_finite);
}

template <__nv_fp8_interpretation_t Kind>
__device__ std::uint8_t encode(float v, float scale) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(v / scale, __NV_SATFINITE, Kind));
}

template <__nv_fp8_interpretation_t Kind>
__global__ void quantize_kernel(const __nv_bfloat16* __restrict__ src, Quantize q) {
  __shared__ float tile[kTile][kTile + 1];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * kTile, c0 = std::int64_t(blockIdx.y) * kTile;
  const std::int64_t c = c0 + threadIdx.x;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const std::int64_t r = r0 + i;
    const bool inside = r < q.rows && c < q.cols;
    const float v = inside ? __bfloat162float(src[r * q.cols + c]) : 0.f;
    tile[i][threadIdx.x] = v;
    if (q.codes && inside) q.codes[r * q.cols + c] = encode<Kind>(v, q.row_scale[q.rowwise ? r : 0]);
  }
  if (!q.codes_t) return;
  __syncthreads();
  // codes_t[c, r] = src[r, c]: this thread's column of the tile becomes a run of one output row.
  const std::int64_t r = r0 + threadIdx.x;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const std::int64_t ct = c0 + i;
    if (ct < q.cols && r < q.rows)
      q.codes_t[ct * q.rows + r] = encode<Kind>(tile[threadIdx.x][i], q.col_scale[q.rowwise ? ct : 0]);
  }
}

dim3 tiles(std::int64_t rows, std::int64_t cols) {
  return dim3(static_cast<unsigned>((rows + kTile - 1) / kTile), static_cast<unsigned>((cols + kTile - 1) / kTile));
}
}  // namespace

void launch_reduce(const void* src, std::int64_t rows, std::int64_t cols, const Reduce& out, cudaStream_t s) {
  for (auto [p, n] : {std::pair{out.row_amax, rows}, {out.col_amax, cols}, {out.tensor_amax, std::int64_t{1}}, {out.col_sum, cols}})
    if (p) cuda::check(cudaMemsetAsync(p, 0, static_cast<std::size_t>(n) * sizeof(float), s), "cudaMemsetAsync");
  reduce_kernel<<<tiles(rows, cols), dim3(kTile, kRowsPerPass), 0, s>>>(static_cast<const __nv_bfloat16*>(src), rows, cols, out);
}

void launch_scales(float* amax_then_scale, std::int64_t n, float max_finite, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 1024));
  scales_kernel<<<blocks, 256, 0, s>>>(amax_then_scale, n, max_finite);
}

void launch_quantize(const Quantize& q, cudaStream_t s) {
  const auto* src = static_cast<const __nv_bfloat16*>(q.src);
  if (q.format == fp8_train::Format::e4m3)
    quantize_kernel<__NV_E4M3><<<tiles(q.rows, q.cols), dim3(kTile, kRowsPerPass), 0, s>>>(src, q);
  else
    quantize_kernel<__NV_E5M2><<<tiles(q.rows, q.cols), dim3(kTile, kRowsPerPass), 0, s>>>(src, q);
}

}  // namespace opmeter::linear::fp8_cuda
