#pragma once
// Op `model`'s tensors: what the worker's model reads and writes (worker/model_case.py), as the
// pipeline declares them (Pipeline::model_input, model_output):
//   vision models (resnet18, ..., vit_b_16): in  image  batch x 3 x image x image (NCHW)
//                                            out logits batch x 1000
//   opt_66b_prefill:                         in  hidden batch x seq x 9216, out the same shape
//   opt_66b_decode:                          in  hidden batch x 1 x 9216 (one new token per
//                                            sequence; the KV cache of `kv` tokens is the
//                                            model's state, drawn in the worker), out the same
// Activations are stored in the case's dtype. The values are checked by the worker.
#include <cstddef>

#include "opmeter/pipeline.hpp"
#include "opmeter/worker_checked_spec.hpp"

namespace opmeter::model {

// The built-in pipeline a model case runs whole, built from its parameters. CaseError for a name
// that is no built-in pipeline (naming the known ones) or a bad value.
pipeline::Pipeline model_pipeline(const Case& c);

class ModelSpec final : public WorkerCheckedSpec {
 public:
  void bind(const Case& c) override;
  std::vector<TensorDesc> inputs() const override;
  TensorDesc output() const override;
  // The worker's bound on its error metric for the dtype (model_case.py TOLERANCE): shown where
  // a result carries its op's tolerance; the check uses the one the worker sends.
  double tolerance() const override;

 private:
  Elem act() const;
  Case case_;
  pipeline::Pipeline::ModelTensor in_, out_;
};

}  // namespace opmeter::model
