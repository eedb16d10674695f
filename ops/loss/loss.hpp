#pragma once
// Loss ops over batch x seq x hidden with mean reduction; the output is one fp32 value.
//   mse            mean((pred - target)^2)
//   cross_entropy  logits rows x hidden (hidden = classes), integer labels per row:
//                  mean(logsumexp(row) - row[label])
// Error: |loss - ref| / ref-scale (mean of |terms|). oneDNN has no loss primitive.
#include "opmeter/tensor_op.hpp"

namespace opmeter::loss {

enum class Kind { mse, cross_entropy };

class LossOp : public tensor::TensorOp {
 public:
  explicit LossOp(Kind k) : kind_(k) {}
  // mse: pred, target (the dtype's storage); cross_entropy: logits, labels (int32 in [0, hidden)).
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override { return 1; }
  std::size_t out_cols() const override { return 1; }
  Elem out_elem() const override { return Elem::f32; }
  double fp32_tolerance() const override { return 1e-5; }
  double reference_row_cost() const override;
  // A scalar loss is not rounded to 16 bits: only the inputs are 16-bit.
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;

 protected:
  Kind kind_;
};

}  // namespace opmeter::loss
