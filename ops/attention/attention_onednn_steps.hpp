#pragma once
// The three-op attention with oneDNN, every intermediate in memory: S = scale q k^T [+ causal
// mask] (fp32), P = softmax(S) (case dtype), O = P v. Shared by attention's onednn_unfused and
// composite ops that contain an attention (transformer_block's, reading q, k, v where a fused
// QKV projection left them: any batch dims and strides).
#include <functional>

#include "opmeter/buffer.hpp"
#include "opmeter/dtype.hpp"
#include "ops/attention/attention.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::attention {

// q, v, o: [batch dims..., seq, d]; kt: [batch dims..., d, seq] (k seen transposed).
struct OnednnAttentionLayout {
  dnnl::memory::desc q, kt, v, o;
};

class OnednnAttentionSteps {
 public:
  using Input = std::function<const void*(std::size_t copy)>;
  using Output = std::function<void*(std::size_t copy)>;
  // Appends the steps up to `stage` to `seq`: at stage scores S (case dtype) and at probs P are
  // the output. The intermediates live here, one set shared by all copies.
  void add(tensor::OnednnSequence& seq, const OnednnAttentionLayout& md, DType dtype, float scale, bool causal,
           Stage stage, std::size_t copies, const Input& q, const Input& k, const Input& v, const Output& out);

 private:
  Buffer mask_, scores_, probs_;
};

}  // namespace opmeter::attention
