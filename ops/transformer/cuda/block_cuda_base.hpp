#pragma once
// What the CUDA transformer_block impls (`cuda`: cuBLASLt projections, `cuda_quant`: weight-only
// ones) share: the scratch buffers of the block's passes, its LayerNorm plan, the attention core
// between the QKV projection and Wo (split into heads, flash attention, merge) and what the flash
// kernel needs of the device. Each impl adds its projections around them.
#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "ops/attention/cuda/flash_attention.hpp"
#include "ops/norm/cuda/norm_kernels.hpp"
#include "ops/transformer/cuda/head_layout.hpp"
#include "ops/transformer/transformer_block.hpp"
#include "opmeter/cuda/device.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::transformer {

// The flash kernel's needs of this device for the block's head_dim and head count.
inline Support flash_block_support(const Shape& s, const cuda::DeviceProps& p) {
  const int d = static_cast<int>(s.head_dim());
  // The host rule's words (transformer_block_cuda_impls.cpp): this check runs first where a GPU is.
  if (!attention::flash_head_dim_built(d))
    return Support::no(
        fmt::format("the flash-attention kernel is built for head_dim (hidden / heads) 64 and 128, not {}", d));
  const std::size_t need = attention::flash_shared_bytes(d);
  if (static_cast<std::size_t>(p.prop.sharedMemPerBlockOptin) < need)
    return Support::no(fmt::format("the flash kernel needs {} bytes of shared memory per block; {} allows {}", need,
                                   p.prop.name, p.prop.sharedMemPerBlockOptin));
  if (double(s.batch) * double(s.heads) > double(INT_MAX)) return Support::no("batch * heads above 2^31 - 1 blocks");
  return Support::yes();
}

template <class Op>
class BlockCudaBase : public cuda::DeviceImpl<Op> {
 protected:
  Shape shape() const { return shape_of(this->case_); }
  std::size_t elem() const { return size_of(this->case_.dtype); }

  // The passes' scratch, sized for this case (kept when it already is: the plans hold addresses).
  void allocate_scratch() {
    const auto s = shape();
    const std::size_t rh = s.rows() * s.hidden * elem();
    sized(narrow_, rh);
    sized(wide_, s.rows() * std::max(3 * s.hidden, s.mlp) * elem());
    sized(heads_, 3 * rh);
    sized(attn_, rh);
    sized(h_, rh);
  }
  static void sized(cuda::DeviceBuffer& b, std::size_t bytes) {
    if (b.bytes() != bytes) b = cuda::DeviceBuffer(bytes);
  }

  // The LayerNorm plan and the flash kernel's set-up, once per case.
  void plan_layernorm_and_attention(const cudaDeviceProp& p) {
    const auto s = shape();
    ln_plan_ = norm::plan_rows(norm::RowOp::layernorm, this->case_.dtype, static_cast<std::int64_t>(s.rows()),
                               static_cast<int>(s.hidden), {p.multiProcessorCount, p.sharedMemPerBlockOptin});
    attention::flash_prepare(this->case_.dtype, static_cast<int>(s.head_dim()));
  }

  void layernorm(const void* x, std::size_t gamma, std::size_t beta, void* y) {
    const auto s = shape();
    norm::launch_rows(ln_plan_,
                      {.x = x,
                       .y = y,
                       .gamma = static_cast<const float*>(this->in(gamma)),
                       .beta = static_cast<const float*>(this->in(beta)),
                       .rows = static_cast<std::int64_t>(s.rows()),
                       .hidden = static_cast<int>(s.hidden)},
                      this->stream());
  }

  // Attention of the QKV rows in wide_, its merged heads into narrow_ (attn_ holds the heads' output).
  void attention_of_qkv() {
    const auto s = shape();
    const HeadLayout layout{.batch = static_cast<std::int64_t>(s.batch),
                            .seq = static_cast<int>(s.seq),
                            .heads = static_cast<int>(s.heads),
                            .head_dim = static_cast<int>(s.head_dim())};
    launch_split_qkv(layout, wide_.data(), heads(0), heads(1), heads(2), this->stream());
    attention::launch_flash_attention(this->case_.dtype,
                                      {.q = heads(0),
                                       .k = heads(1),
                                       .v = heads(2),
                                       .o = attn_.data(),
                                       .heads_total = layout.batch * layout.heads,
                                       .seq = layout.seq,
                                       .head_dim = layout.head_dim,
                                       .causal = s.causal,
                                       .scale = s.scale()},
                                      this->stream());
    launch_merge_heads(layout, attn_.data(), narrow_.data(), this->stream());
  }

  norm::RowPlan ln_plan_;
  // narrow_: LN1 out, then the merged heads, then LN2 out; wide_: QKV, then the MLP's hidden
  // layer; heads_: q, k, v in the flash kernel's layout; attn_: its output, then each projection's
  // output before a residual add; h_: the attention half's result.
  cuda::DeviceBuffer narrow_, wide_, heads_, attn_, h_;

 private:
  void* heads(int part) const {
    return static_cast<char*>(heads_.data()) + std::size_t(part) * shape().rows() * shape().hidden * elem();
  }
};

}  // namespace opmeter::transformer
