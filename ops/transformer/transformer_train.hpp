#pragma once
// transformer_block's training step (mode=train, phase=step|forward|backward as on linear, see
// ops/linear/linear.hpp): the forward, then the gradients of every input from dy, the loss's
// gradient of y (an extra input, rows x hidden, in the activations' type).
//   backward  dW2 = dy^T a, db2, da = dy W2, du = da act'(u), dW1 = du^T LN2(h), db1,
//             dh = dy + LN2'(du W1) (dgamma2, dbeta2), dWo = dh^T o, dbo, do = dh Wo,
//             dq dk dv = attention's backward, dWqkv = dqkv^T LN1(x), dbqkv,
//             dx = dh + LN1'(dqkv Wqkv) (dgamma1, dbeta1)
// The output is one tensor in the activations' type: y (rows x hidden), then the gradient of each
// input in the inputs' order (x, ln1_gamma, ln1_beta, wqkv, bqkv, wo, bo, ln2_gamma, ln2_beta, w1,
// b1, w2, b2), each shaped as its input.
#include <array>

#include "ops/transformer/transformer_block.hpp"

namespace opmeter::transformer {

bool training(const Case& c);
inline constexpr std::size_t kBlockInputs = 13;  // without dy

// Element counts of the block's inputs (without dy), in their order.
std::array<std::size_t, kBlockInputs> input_counts(const Shape& s);

struct TrainLayout {
  std::size_t y = 0;
  std::array<std::size_t, kBlockInputs> grad{};  // offset of the gradient of input i
  std::size_t total = 0;
  std::string name_at(std::size_t element) const;     // "y", "dx", "dwqkv", ... for messages
  std::size_t index_in(std::size_t element) const;    // its index within that tensor
};
TrainLayout train_layout(const Shape& s);

// Work of the step's parts. Forward: the inference forward's. Backward: twice the forward's GEMM
// FLOPs (dA = dZ W and dW = dZ^T A per projection), attention's backward (dP = dO v^T, dv = P^T dO,
// dq = dS k, dk = dS^T q: twice its forward's two products; the softmax's backward), the
// LayerNorms', activation's and bias gradients and the residual adds.
Work train_forward_work(const Case& c);
Work train_backward_work(const Case& c);
Work train_work(const Case& c);  // by the case's phase

// mode and phase as optional parameters, and their validation (quant recipes have no training
// step here).
std::vector<OptionalParam> train_params();
void validate_train(const Case& c);

}  // namespace opmeter::transformer
