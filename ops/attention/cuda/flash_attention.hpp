#pragma once
// opmeter's flash-attention forward (flash_attention_sm80.cu): O = softmax(scale q k^T) v for every
// (batch, head), q, k, v and O of seq x head_dim in bf16 or fp16, tensor-core products with fp32
// accumulation, an online softmax over key tiles, never a seq x seq matrix in memory.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::attention {

struct FlashArgs {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  std::int64_t heads_total;  // batch * heads; each head's tensors are seq x head_dim, contiguous
  int seq;
  int head_dim;
  bool causal;
  float scale;
};

// The head dims the kernel is built for (64 and 128).
bool flash_head_dim_built(int head_dim);
// Dynamic shared memory one block of the kernel takes for a head dim it is built for.
std::size_t flash_shared_bytes(int head_dim);
// Lets the kernel of (dtype, head_dim) use its shared memory on the current device: call once
// per device before launches (and outside graph capture).
void flash_prepare(DType dtype, int head_dim);
// Enqueues the kernel on `stream`. Throws std::invalid_argument for a dtype or head dim it is not
// built for, or for tensors not 16-byte aligned.
void launch_flash_attention(DType dtype, const FlashArgs& args, cudaStream_t stream);

}  // namespace opmeter::attention
