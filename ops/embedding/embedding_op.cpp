// The embedding op: out[r, :] = table[id[r], :] for r < batch*seq (a token embedding lookup).
// Parameters, validation, work model, and its spec and fp64 reference impl (embedding.hpp).
#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/tensor_op.hpp"
#include "ops/embedding/embedding.hpp"

namespace opmeter::embedding {
namespace {

using tensor::param;

// Ids read (int32), the gathered rows read and written.
Work work(const Case& c) {
  const double rows = double(tensor::rows_of(c)), row_bytes = double(param(c, "hidden")) * double(size_of(c.dtype));
  return {0, rows * 4 + rows * row_bytes, rows * row_bytes};
}

OpDef def() {
  OpDef op = tensor::rows_op("embedding", "y = table[ids]: a lookup of batch*seq rows of a vocab x hidden table", work,
                             {{"vocab", "50272"}});
  op.defaults = {{"batch", "1"}, {"seq", "2048"}, {"hidden", "9216"}, {"vocab", "50272"}};
  op.example = {{"batch", "2"}, {"seq", "3"}, {"hidden", "37"}, {"vocab", "11"}};
  auto rows_validate = op.validate;
  op.validate = [rows_validate](const Case& c) {
    rows_validate(c);
    tensor::check_range(c, "vocab", 1, std::int64_t{1} << 24);
  };
  // The memory a case holds: ids, the whole table (a call reads only the rows it gathers) and
  // the output. Cold-cache copies multiply all of it; a default table (1.9 GB fp32) is far beyond
  // any cache, so it gets one copy, and a table beyond memory makes the case `skipped`.
  op.footprint = [](const Case& c) {
    const double rows = double(tensor::rows_of(c)), hidden = double(param(c, "hidden")), e = double(size_of(c.dtype));
    return rows * 4 + double(param(c, "vocab")) * hidden * e + rows * hidden * e;
  };
  op.model_cost = [](const Case& c) { return ModelCost{double(param(c, "vocab")) * double(param(c, "hidden")), 0}; };
  // Odd rows with a tail, a one-row one-element table, one row 2^16 + 1 wide, rows a vector wide
  // gathered from a table larger than the lookups.
  op.check_shapes = {{{"batch", "2"}, {"seq", "5"}, {"hidden", "263"}, {"vocab", "11"}},
                     {{"batch", "1"}, {"seq", "1"}, {"hidden", "1"}, {"vocab", "1"}},
                     {{"batch", "1"}, {"seq", "3"}, {"hidden", "65537"}, {"vocab", "2"}},
                     {{"batch", "3"}, {"seq", "7"}, {"hidden", "64"}, {"vocab", "1009"}}};
  return op;
}
const bool registered = [] {
  Registry::global().add(def());
  tensor::register_reference<EmbeddingOp>("embedding", {DType::fp32, DType::bf16},
                                          [](const Case& c) { return double(tensor::rows_of(c) * tensor::hidden_of(c)); });
  return true;
}();

}  // namespace
}  // namespace opmeter::embedding
