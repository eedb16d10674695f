#pragma once
// Op `model`'s tensors: what the worker's model reads and writes (worker/model_case.py).
//   vision models (resnet18, ..., vit_b_16): in  image  batch x 3 x image x image (NCHW)
//                                            out logits batch x 1000
//   opt_66b_prefill:                         in  hidden batch x seq x 9216, out the same shape
//   opt_66b_decode:                          in  hidden batch x 1 x 9216 (one new token per
//                                            sequence; the KV cache of `kv` tokens is the
//                                            model's state, drawn in the worker), out the same
// Activations are stored in the case's dtype. The values are checked by the worker.
#include <cstddef>

#include "opmeter/worker_checked_spec.hpp"

namespace opmeter::model {

constexpr std::size_t kOptHidden = 9216;  // OPT-66B's hidden size
constexpr std::size_t kClasses = 1000;    // ImageNet's classes: the vision models' logits

class ModelSpec final : public WorkerCheckedSpec {
 public:
  void bind(const Case& c) override { case_ = c; }
  std::vector<TensorDesc> inputs() const override;
  TensorDesc output() const override;
  // The worker's bound on its error metric for the dtype (model_case.py TOLERANCE): shown where
  // a result carries its op's tolerance; the check uses the one the worker sends.
  double tolerance() const override;

 private:
  bool opt() const;
  std::size_t tokens() const;  // per sequence: seq for prefill, 1 for decode
  Elem act() const;
  Case case_;
};

}  // namespace opmeter::model
