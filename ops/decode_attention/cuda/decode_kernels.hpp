#pragma once
// opmeter's CUDA decode attention (flash-decoding). Each (batch*head, split) block takes a
// contiguous chunk of the KV cache; inside it, groups of G lanes take one key at a time (lanes
// hold W consecutive elements of head_dim: 16-byte loads on the fast path), a shuffle reduction
// gives the score, and each group keeps an online softmax (max m, sum l, accumulator) in fp32
// registers. The groups of a block merge in shared memory. With one split the block writes the
// output; with several, each writes a partial (m, l, acc[d]) and a second small kernel merges
// the splits of each head. Scores are in log2 units (q scaled by log2(e) / sqrt(d)): exp2f.
//   fast path     head_dim 64 or 128, fp32/fp16/bf16: W = 16 bytes of elements, G = d / W;
//   generic path  head_dim <= 256: a warp per key, scalar loads, ceil(d / 32) elements per lane.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::decode_attention {

constexpr int kMaxHeadDim = 256;  // the generic path's register budget
constexpr int kMaxSplits = 64;

struct DecodeArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  float* partials = nullptr;  // heads * splits * (d + 2) floats (splits > 1)
  std::int64_t heads = 0, kv = 0;  // heads = batch * heads
  int d = 0;
  int splits = 1, chunk = 0;  // keys per split; splits = ceil(kv / chunk)
  float scale_log2 = 0;       // log2(e) / sqrt(d)
};

struct DecodePlan {
  int splits = 1, chunk = 0;
  bool fast = false;
};
// Splits for a grid of about 8 blocks per SM, each at least 32 keys, at most kMaxSplits.
DecodePlan plan_decode(DType d, std::int64_t heads, std::int64_t kv, int head_dim, int sms);
// Throws std::runtime_error on a launch error or a head_dim above kMaxHeadDim.
void launch_decode(DType d, const DecodeArgs& a, cudaStream_t s);

}  // namespace opmeter::decode_attention
