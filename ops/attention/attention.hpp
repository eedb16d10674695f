#pragma once
// Scaled dot-product attention over q, k, v: batch x heads x seq x head_dim, scale 1/sqrt(d),
// optional causal mask. `stage` says how much of it a case computes:
//   scores  S = scale q k^T                  (output seq x seq per head)
//   probs   P = softmax(S)                   (output seq x seq per head)
//   full    O = P v                          (output seq x head_dim per head)
// Error: scores / full: |got - ref| / (sum of |terms|); probs: / (ref + 1/seq).
#include "opmeter/tensor_op.hpp"

namespace opmeter::attention {

enum class Stage { scores, probs, full };

struct Shape {
  std::size_t batch, heads, seq, d;
  bool causal;
  Stage stage;
  std::size_t heads_total() const { return batch * heads; }
  float scale() const;
};
Shape shape_of(const Case& c);

class AttentionOp : public tensor::TensorOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override;
  std::size_t out_cols() const override;
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;

 protected:
  static constexpr std::size_t kQ = 0, kK = 1, kV = 2;
};

}  // namespace opmeter::attention
