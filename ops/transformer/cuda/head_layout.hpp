#pragma once
// Moves between the row layout of the block's projections (rows = batch * seq, a row holding the
// heads side by side) and the head layout of the flash-attention kernel (batch x heads x seq x
// head_dim, each head's seq x head_dim contiguous). Elements are 2 bytes (fp16 / bf16) and are
// only moved, never converted, so one kernel serves both types.
#include <cuda_runtime.h>

#include <cstdint>

namespace opmeter::transformer {

struct HeadLayout {
  std::int64_t batch = 0;
  int seq = 0;
  int heads = 0;
  int head_dim = 0;  // a multiple of 8 (16-byte moves)
};

// qkv: rows x 3*hidden (q | k | v, head i at columns i*head_dim of its part) into q, k, v, each
// batch x heads x seq x head_dim. Throws std::invalid_argument for a head_dim not a multiple of
// 8 or a pointer not 16-byte aligned.
void launch_split_qkv(const HeadLayout& l, const void* qkv, void* q, void* k, void* v, cudaStream_t s);
// o: batch x heads x seq x head_dim back into rows x hidden (heads side by side). Same limits.
void launch_merge_heads(const HeadLayout& l, const void* o, void* rows, cudaStream_t s);

}  // namespace opmeter::transformer
