#include "engine/op_figures.hpp"

namespace opmeter {

void derive_op_figures(const OpDef& op, Result& r) {
  if (op.no_rate)
    if (auto note = op.no_rate(r); !note.empty()) withhold_rates(r, note);
  derive_rates(r);
  if (op.derived_metrics)
    for (auto& [name, metric] : op.derived_metrics(r)) r.set_metric(name, metric);
}

}  // namespace opmeter
