#pragma once
// oneDNN memory descriptors of transformer_block's tensors and intermediates, shared by its
// impls: activations rows x width, weights (stored out x in) seen as in x out, biases 1 x out.
#include "ops/tensor/onednn_util.hpp"
#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

struct OnednnDescs {
  OnednnDescs(const Shape& s, DType dtype);
  dnnl::memory::desc x, qkv, x_mlp;               // rows x hidden, rows x 3 hidden, rows x mlp
  dnnl::memory::desc wqkv, wo, w1, w2;            // weights as in x out
  dnnl::memory::desc bqkv, bo, b1, b2, gamma;     // fp32 vectors
  // q, k^T, v of every (batch, head) read in place from the fused projection's output, and the
  // attention's output written as rows x hidden (heads side by side): [batch, heads, seq, d].
  dnnl::memory::desc q, kt, v, o;
};

}  // namespace opmeter::transformer
