// embedding's spec: the ids and the table, and the fp64 reference (the row the id names).
#include <cmath>

#include "ops/embedding/embedding.hpp"

namespace opmeter::embedding {

std::vector<TensorDesc> EmbeddingOp::inputs() const {
  // Integer inputs are drawn in [lo, hi): every id names a row of the table.
  return {{"ids", Elem::s32, out_rows(), 0, double(vocab())}, {"table", act(), vocab() * out_cols()}};
}

void EmbeddingOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  const std::size_t cols = out_cols(), id = static_cast<std::size_t>(in[kIds][row]);
  for (std::size_t c = 0; c < cols; ++c) {
    ref[c] = in[kTable][id * cols + c];
    mag[c] = std::fabs(ref[c]);
  }
}

}  // namespace opmeter::embedding
