#pragma once
// The intermediates of transformer_block's forward on the host, one set shared by all copies, as
// the onednn_unfused, opmeter and opmeter_quant impls keep them.
#include "opmeter/buffer.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

struct BlockBuffers {
  Buffer ln;    // LayerNorm's output (LN1, then LN2)
  Buffer qkv;   // the fused q, k, v projection
  Buffer attn;  // attention's output
  Buffer h;     // x + attention's projection
  Buffer mlp;   // the MLP's hidden layer
  void allocate(const Shape& s, DType dtype) {
    const std::size_t e = size_of(dtype), r = s.rows(), hidden = s.hidden;
    ln = Buffer(r * hidden * e);
    qkv = Buffer(3 * r * hidden * e);
    attn = Buffer(r * hidden * e);
    h = Buffer(r * hidden * e);
    mlp = Buffer(r * s.mlp * e);
  }
};

}  // namespace opmeter::transformer
