#pragma once
// oneDNN memory descriptors of transformer_block's tensors and intermediates, shared by its
// impls: activations rows x width, weights (stored out x in) seen as in x out, biases 1 x out.
#include <functional>

#include "ops/tensor/onednn_util.hpp"
#include "ops/transformer/block_projections.hpp"
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

// Adds to `seq` one oneDNN matmul dst = src W^T + bias [then act] [+ residual] (bias, act and the
// residual add as post-ops) over `copies` input sets; each function gives its tensor for set i
// (residual may be empty: none).
using ConstPtrOf = std::function<const void*(std::size_t)>;
using PtrOf = std::function<void*(std::size_t)>;
void add_projection(tensor::OnednnSequence& seq, std::size_t copies, const dnnl::memory::desc& src, const ConstPtrOf& a,
                    const dnnl::memory::desc& w_md, const ConstPtrOf& w, const dnnl::memory::desc& b_md,
                    const ConstPtrOf& bias, const dnnl::memory::desc& dst, const PtrOf& y, tensor::Act act,
                    const ConstPtrOf& residual);

// Projection p of a block as one oneDNN matmul over `copies` input sets, wired as `steps` says
// (its descriptors from md); input(i, k) is input k of set i.
void add_block_projection(tensor::OnednnSequence& seq, std::size_t copies, const OnednnDescs& md, BlockProjection p,
                          const ProjectionSteps& steps, const InputOf& input);

}  // namespace opmeter::transformer
