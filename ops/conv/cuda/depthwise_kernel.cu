// Depthwise convolution kernels (depthwise_kernel.hpp).
//   tiled:  one block per (plane, output tile). The block stages the plane's r x r weights and
//           the input the tile reaches (its halo included, zeros outside the image) in shared
//           memory as fp32, then each thread sums kRows outputs of one column, every tap a
//           shared-memory read and an FMA. Threads of a warp take adjacent columns: stride 1
//           reads are conflict-free.
//   direct: a grid-stride loop, one output per iteration, taps read from global memory; for
//           shapes whose tile would not fit in shared memory.
#include "ops/conv/cuda/depthwise_kernel.hpp"

#include <algorithm>

#include "ops/linear/cuda/linear_act_math.cuh"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::conv {
namespace {
using tensor::Act;

constexpr std::size_t kSharedLimit = 48 * 1024;  // without the opt-in for more per block

// The activation at run time: once per output, beside r * r FMAs.
__device__ inline float activate(Act a, float v) {
  switch (a) {
    case Act::relu: return linear::activate<Act::relu>(v);
    case Act::relu6: return linear::activate<Act::relu6>(v);
    case Act::leaky_relu: return linear::activate<Act::leaky_relu>(v);
    case Act::gelu: return linear::activate<Act::gelu>(v);
    case Act::gelu_tanh: return linear::activate<Act::gelu_tanh>(v);
    case Act::silu: return linear::activate<Act::silu>(v);
    case Act::sigmoid: return linear::activate<Act::sigmoid>(v);
    case Act::hardswish: return linear::activate<Act::hardswish>(v);
    default: return v;
  }
}

// A tile of TX x (TY * ROWS) outputs, block TX x TY threads.
template <int TX, int TY, int ROWS>
struct Tile {
  static constexpr int kTx = TX, kTy = TY, kRows = ROWS, kThreads = TX * TY, kWide = TX, kHigh = TY * ROWS;
  // Input rows and columns the tile reaches.
  static std::int64_t in_high(const DepthwiseArgs& a) { return (kHigh - 1) * a.stride + a.r; }
  static std::int64_t in_wide(const DepthwiseArgs& a) { return (kWide - 1) * a.stride + a.r; }
  // Weights first (padded to 16 bytes), then the input tile.
  static std::int64_t weight_floats(const DepthwiseArgs& a) { return (a.r * a.r + 3) / 4 * 4; }
  static std::size_t shared_bytes(const DepthwiseArgs& a) {
    return std::size_t(weight_floats(a) + in_high(a) * in_wide(a)) * sizeof(float);
  }
};
using Tile32 = Tile<32, 8, 4>;
using Tile8 = Tile<8, 8, 1>;

template <class T, class TileT>
__global__ void __launch_bounds__(TileT::kThreads) depthwise_tiled(DepthwiseArgs a, int in_high, int in_wide, int weight_floats) {
  constexpr int TX = TileT::kTx, TY = TileT::kTy, ROWS = TileT::kRows;
  extern __shared__ float shared[];
  float* sw = shared;
  float* sx = shared + weight_floats;
  const std::int64_t plane = blockIdx.x;  // n * c planes along x: up to 2^31 - 1 blocks
  const std::int64_t c = plane % a.c;
  const int r = static_cast<int>(a.r), stride = static_cast<int>(a.stride);
  const std::int64_t oy0 = std::int64_t(blockIdx.y) * TY * ROWS, ox0 = std::int64_t(blockIdx.z) * TX;
  const std::int64_t iy0 = oy0 * a.stride - a.pad, ix0 = ox0 * a.stride - a.pad;
  const int tid = threadIdx.y * TX + threadIdx.x;

  const float* w = a.w + c * a.r * a.r;
  for (int i = tid; i < r * r; i += TX * TY) sw[i] = w[i];
  const T* x = static_cast<const T*>(a.x) + plane * a.h * a.h;
  for (int i = tid; i < in_high * in_wide; i += TX * TY) {
    const std::int64_t iy = iy0 + i / in_wide, ix = ix0 + i % in_wide;
    sx[i] = iy >= 0 && iy < a.h && ix >= 0 && ix < a.h ? cuda::widen(x[iy * a.h + ix]) : 0.f;
  }
  __syncthreads();

  float acc[ROWS];
  const float b = a.bias[c];
#pragma unroll
  for (int k = 0; k < ROWS; ++k) acc[k] = b;
  const float* col = sx + threadIdx.x * stride;
  for (int rr = 0; rr < r; ++rr) {
    for (int q = 0; q < r; ++q) {
      const float wq = sw[rr * r + q];
#pragma unroll
      for (int k = 0; k < ROWS; ++k) acc[k] += wq * col[((threadIdx.y + k * TY) * stride + rr) * in_wide + q];
    }
  }
  const std::int64_t ox = ox0 + threadIdx.x;
  T* y = static_cast<T*>(a.y) + plane * a.oh * a.oh;
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    const std::int64_t oy = oy0 + threadIdx.y + k * TY;
    if (oy < a.oh && ox < a.oh) y[oy * a.oh + ox] = cuda::narrow<T>(activate(a.act, acc[k]));
  }
}

template <class T>
__global__ void depthwise_direct(DepthwiseArgs a) {
  const std::int64_t total = a.n * a.c * a.oh * a.oh;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t ox = i % a.oh, oy = (i / a.oh) % a.oh, plane = i / (a.oh * a.oh), c = plane % a.c;
    const T* xp = x + plane * a.h * a.h;
    const float* w = a.w + c * a.r * a.r;
    float acc = a.bias[c];
    for (std::int64_t rr = 0; rr < a.r; ++rr) {
      const std::int64_t iy = oy * a.stride + rr - a.pad;
      if (iy < 0 || iy >= a.h) continue;
      for (std::int64_t q = 0; q < a.r; ++q) {
        const std::int64_t ix = ox * a.stride + q - a.pad;
        if (ix >= 0 && ix < a.h) acc += w[rr * a.r + q] * cuda::widen(xp[iy * a.h + ix]);
      }
    }
    y[i] = cuda::narrow<T>(activate(a.act, acc));
  }
}

template <class T, class TileT>
void launch_tiled(const DepthwiseArgs& a, cudaStream_t s) {
  const auto tiles_y = static_cast<unsigned>((a.oh + TileT::kHigh - 1) / TileT::kHigh);
  const auto tiles_x = static_cast<unsigned>((a.oh + TileT::kWide - 1) / TileT::kWide);
  const dim3 grid(static_cast<unsigned>(a.n * a.c), tiles_y, tiles_x), block(TileT::kTx, TileT::kTy);
  depthwise_tiled<T, TileT><<<grid, block, TileT::shared_bytes(a), s>>>(
      a, static_cast<int>(TileT::in_high(a)), static_cast<int>(TileT::in_wide(a)), static_cast<int>(TileT::weight_floats(a)));
}

template <class T>
void launch_typed(const DepthwiseArgs& a, cudaStream_t s) {
  switch (depthwise_path(a)) {
    case DepthwisePath::tile32: launch_tiled<T, Tile32>(a, s); return;
    case DepthwisePath::tile8: launch_tiled<T, Tile8>(a, s); return;
    case DepthwisePath::direct: {
      constexpr int kThreads = 256;
      const std::int64_t total = a.n * a.c * a.oh * a.oh;
      const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>((total + kThreads - 1) / kThreads, 1, 1 << 20));
      depthwise_direct<T><<<blocks, kThreads, 0, s>>>(a);
      return;
    }
  }
}

}  // namespace

DepthwisePath depthwise_path(const DepthwiseArgs& a) {
  // Grid limits of the tiled kernels: planes along x, tiles along y and z (at most 65535 each).
  const bool grid_fits = a.n * a.c < (std::int64_t{1} << 31) && (a.oh + 7) / 8 <= 65535;
  if (!grid_fits) return DepthwisePath::direct;
  if (a.oh > 16 && Tile32::shared_bytes(a) <= kSharedLimit) return DepthwisePath::tile32;
  if (Tile8::shared_bytes(a) <= kSharedLimit) return DepthwisePath::tile8;
  return DepthwisePath::direct;
}

const char* to_string(DepthwisePath p) {
  switch (p) {
    case DepthwisePath::tile32: return "shared-memory tile of 32x32 outputs with its halo";
    case DepthwisePath::tile8: return "shared-memory tile of 8x8 outputs with its halo";
    default: return "direct: one thread per output from global memory";
  }
}

void launch_depthwise(DType d, const DepthwiseArgs& a, cudaStream_t s) {
  switch (d) {
    case DType::fp16: launch_typed<__half>(a, s); break;
    case DType::bf16: launch_typed<__nv_bfloat16>(a, s); break;
    default: launch_typed<float>(a, s); break;
  }
}

}  // namespace opmeter::conv
