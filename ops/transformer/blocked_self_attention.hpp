#pragma once
// The self-attention step of the CPU transformer_block impls (opmeter, opmeter_quant): per
// (batch, head, block of queries), that head's q, k and v gathered from the qkv rows into a
// per-thread buffer, the blocked attention kernel (ops/attention/attention_blocked.hpp), and its
// output copied back into the attention output's head columns.
#include <vector>

#include "opmeter/buffer.hpp"
#include "opmeter/dtype.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

class BlockedSelfAttention {
 public:
  // Buffers for `threads` threads (at least OpenMP's maximum), for the shape's seq and head size.
  void prepare(const Shape& s, DType dtype, int threads);
  // qkv: rows x 3 hidden (q, k, v side by side); attn: rows x hidden.
  void run(const Shape& s, DType dtype, const void* qkv, void* attn);

 private:
  std::vector<Buffer> per_thread_;  // one gather buffer each: q, k, v and the output of one head
  std::vector<Buffer> workspaces_;  // the blocked kernel's, one per thread
};

}  // namespace opmeter::transformer
