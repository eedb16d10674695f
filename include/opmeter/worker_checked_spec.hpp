#pragma once
// The spec of an op whose answer opmeter cannot compute itself (a whole model end to end): the
// impl that runs it, in the worker, recomputes part of it in float64 and sends its verdict with
// the output (docs/worker-protocol.md, "Ops the worker checks"). opmeter still checks what it
// can alone: the output has the spec's size and every element was written and is finite.
#include "opmeter/op_spec.hpp"

namespace opmeter {

class WorkerCheckedSpec : public OpSpec {
 public:
  // Every element written (no poison left) and finite; ok then means "nothing wrong seen yet",
  // not a verdict on the values: WorkerImpl::verify takes that from the worker.
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;
};

}  // namespace opmeter
