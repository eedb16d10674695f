// opmeter's CUDA decode attention (decode_kernels.hpp). Offsets into q, K, V are int64.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "ops/decode_attention/cuda/decode_kernels.hpp"
#include "opmeter/cuda/reduce.cuh"
#include "opmeter/cuda/vector_io.cuh"

namespace opmeter::decode_attention {
namespace {
using cuda::kVec16;

constexpr int kThreads = 128;
constexpr int kMergeThreads = 128;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// Lane `lane` of a group holds elements (p * G + lane) * W + k, p < P, k < W, of a row; those at
// or beyond d (generic path only) are zeros.
template <class T, int W, int G, int P>
__device__ __forceinline__ void load_slice(const T* row, int d, int lane, bool live, float (&f)[W * P]) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int col = (p * G + lane) * W;
    if (live && col < d) {
      float v[W];
      cuda::load_floats<T, W>(row + col, v);
#pragma unroll
      for (int k = 0; k < W; ++k) f[p * W + k] = v[k];
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) f[p * W + k] = 0.0f;
    }
  }
}

// Block (head, split): keys [split * chunk, min(kv, (split + 1) * chunk)), a key per group of G lanes.
template <class T, int W, int G, int P>
__global__ void __launch_bounds__(kThreads) decode_split(DecodeArgs a) {
  constexpr int kGroups = kThreads / G, kPer = W * P, kCols = G * W * P;
  static_assert(kThreads % G == 0 && G <= 32 && (G & (G - 1)) == 0, "groups of a power of two lanes in a warp");
  __shared__ float s_m[kGroups], s_l[kGroups];
  __shared__ float s_acc[kGroups * kCols];
  const std::int64_t bh = static_cast<std::int64_t>(blockIdx.x) / a.splits;
  const int split = static_cast<int>(static_cast<std::int64_t>(blockIdx.x) % a.splits);
  const int group = static_cast<int>(threadIdx.x) / G, lane = static_cast<int>(threadIdx.x) % G;
  const std::int64_t d = a.d;
  const T* kh = static_cast<const T*>(a.k) + bh * a.kv * d;
  const T* vh = static_cast<const T*>(a.v) + bh * a.kv * d;

  float q[kPer], acc[kPer];
  load_slice<T, W, G, P>(static_cast<const T*>(a.q) + bh * d, a.d, lane, true, q);
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    q[i] *= a.scale_log2;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const std::int64_t begin = static_cast<std::int64_t>(split) * a.chunk;
  const std::int64_t end = a.kv < begin + a.chunk ? a.kv : begin + a.chunk;
  // Block-uniform trip count: every lane takes part in the group's shuffles; keys past the end are masked.
  for (std::int64_t jb = begin; jb < end; jb += kGroups) {
    const std::int64_t j = jb + group;
    const bool live = j < end;
    float kf[kPer], vf[kPer];
    load_slice<T, W, G, P>(kh + (live ? j : 0) * d, a.d, lane, live, kf);
    load_slice<T, W, G, P>(vh + (live ? j : 0) * d, a.d, lane, live, vf);
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) dot = fmaf(q[i], kf[i], dot);
    dot = cuda::group_reduce<G>(dot, cuda::SumOp{});
    if (live) {
      if (dot > m) {  // m = -inf at first: the factor is 0, and l and acc are 0 anyway
        const float r = exp2f(m - dot);
        l *= r;
#pragma unroll
        for (int i = 0; i < kPer; ++i) acc[i] *= r;
        m = dot;
      }
      const float p = exp2f(dot - m);
      l += p;
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[i] = fmaf(p, vf[i], acc[i]);
    }
  }

  // Merge the block's groups: each weighs exp2(m_g - M); a group that saw no key has m_g = -inf.
  if (lane == 0) {
    s_m[group] = m;
    s_l[group] = l;
  }
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int col = (p * G + lane) * W + k;
      if (col < a.d) s_acc[group * kCols + col] = acc[p * W + k];
    }
  __syncthreads();
  float mx = -INFINITY;
#pragma unroll
  for (int g = 0; g < kGroups; ++g) mx = fmaxf(mx, s_m[g]);
  for (int col = static_cast<int>(threadIdx.x); col < a.d; col += kThreads) {
    float sum = 0.0f, o = 0.0f;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      const float w = s_m[g] == -INFINITY ? 0.0f : exp2f(s_m[g] - mx);
      sum = fmaf(w, s_l[g], sum);
      o = fmaf(w, s_acc[g * kCols + col], o);
    }
    if (a.splits == 1) {
      static_cast<T*>(a.out)[bh * d + col] = cuda::narrow<T>(o / sum);
    } else {
      float* part = a.partials + (bh * a.splits + split) * (d + 2);
      part[2 + col] = o;
      if (col == 0) {
        part[0] = mx;
        part[1] = sum;
      }
    }
  }
}

// Block per head: out = sum_s exp2(m_s - M) acc_s / sum_s exp2(m_s - M) l_s.
template <class T>
__global__ void __launch_bounds__(kMergeThreads) merge_splits(DecodeArgs a) {
  const std::int64_t bh = blockIdx.x, stride = a.d + 2;
  const float* p = a.partials + bh * a.splits * stride;
  float mx = -INFINITY;
  for (int s = 0; s < a.splits; ++s) mx = fmaxf(mx, p[s * stride]);
  for (int col = static_cast<int>(threadIdx.x); col < a.d; col += blockDim.x) {
    float sum = 0.0f, o = 0.0f;
    for (int s = 0; s < a.splits; ++s) {
      const float m = p[s * stride];
      const float w = m == -INFINITY ? 0.0f : exp2f(m - mx);
      sum = fmaf(w, p[s * stride + 1], sum);
      o = fmaf(w, p[s * stride + 2 + col], o);
    }
    static_cast<T*>(a.out)[bh * a.d + col] = cuda::narrow<T>(o / sum);
  }
}

template <class T, int W, int G, int P>
void launch_with(const DecodeArgs& a, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(a.heads * a.splits);
  decode_split<T, W, G, P><<<blocks, kThreads, 0, s>>>(a);
  check(cudaGetLastError(), "decode_attention kernel");
  if (a.splits > 1) {
    merge_splits<T><<<static_cast<unsigned>(a.heads), kMergeThreads, 0, s>>>(a);
    check(cudaGetLastError(), "decode_attention merge kernel");
  }
}

template <class T>
void launch_type(const DecodeArgs& a, cudaStream_t s) {
  constexpr int W = kVec16<T>;
  if (a.d == 64) return launch_with<T, W, 64 / W, 1>(a, s);
  if (a.d == 128) return launch_with<T, W, 128 / W, 1>(a, s);
  if (a.d <= 32) return launch_with<T, 1, 32, 1>(a, s);
  if (a.d <= 64) return launch_with<T, 1, 32, 2>(a, s);
  if (a.d <= 128) return launch_with<T, 1, 32, 4>(a, s);
  if (a.d <= kMaxHeadDim) return launch_with<T, 1, 32, 8>(a, s);
  throw std::runtime_error(fmt::format("decode_attention: head_dim {} above the CUDA kernel's {}", a.d, kMaxHeadDim));
}

}  // namespace

DecodePlan plan_decode(DType, std::int64_t heads, std::int64_t kv, int head_dim, int sms) {
  DecodePlan p;
  p.fast = head_dim == 64 || head_dim == 128;
  const std::int64_t target = 8 * std::int64_t{std::max(sms, 1)};
  std::int64_t splits = (target + heads - 1) / heads;
  splits = std::min({splits, std::int64_t{kMaxSplits}, (kv + 31) / 32, std::int64_t{0x7fffffff} / heads});
  splits = std::max<std::int64_t>(splits, 1);
  const std::int64_t chunk = (kv + splits - 1) / splits;
  p.chunk = static_cast<int>(chunk);
  p.splits = static_cast<int>((kv + chunk - 1) / chunk);  // no empty split
  return p;
}

void launch_decode(DType d, const DecodeArgs& a, cudaStream_t s) {
  switch (d) {
    case DType::fp32: launch_type<float>(a, s); break;
    case DType::fp16: launch_type<__half>(a, s); break;
    case DType::bf16: launch_type<__nv_bfloat16>(a, s); break;
    default: throw std::runtime_error(fmt::format("decode_attention: no CUDA kernel for {}", to_string(d)));
  }
}

}  // namespace opmeter::decode_attention
