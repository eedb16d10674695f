#pragma once
// decode_attention: one query per (batch, head) over a KV cache of `kv` positions:
//   out[b, h, :] = softmax(q[b, h] K[b, h]^T / sqrt(head_dim)) V[b, h]
// q and out are [batch, heads, head_dim], K and V [batch, heads, kv, head_dim], all in the case's
// dtype. Output rows are the (batch, head) pairs, head_dim values each.
// Error: |got - ref| / (sum over keys of p |v| + 2^-20), as attention's full stage.
#include "opmeter/tensor_op.hpp"

namespace opmeter::decode_attention {

struct Shape {
  std::size_t bh, kv, d;  // batch * heads, cache length, head_dim
  float scale() const;
};
Shape shape_of(const Case& c);

class DecodeAttentionOp : public tensor::TensorOp {
 public:
  static constexpr std::size_t kQ = 0, kK = 1, kV = 2;
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override { return shape_of(case_).bh; }
  std::size_t out_cols() const override { return shape_of(case_).d; }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;
};

}  // namespace opmeter::decode_attention
