// The decode_attention op: one new token per sequence attends over a KV cache of `kv` positions,
// out[b, h, :] = softmax(q[b, h] K[b, h]^T / sqrt(head_dim)) V[b, h]; K and V are
// [batch, heads, kv, head_dim]. Memory-bound: the cache is read once per call. Parameters,
// validation, work model and model cost; registers the spec (decode_attention.hpp) and its fp64
// reference impl with it.
#include "ops/decode_attention/decode_attention.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/tensor_op.hpp"

namespace opmeter::decode_attention {
namespace {

using tensor::check_range;
using tensor::param;

double heads_total(const Case& c) { return double(param(c, "batch")) * double(param(c, "heads")); }

Work work(const Case& c) {
  const double bh = heads_total(c), kv = double(param(c, "kv")), d = double(param(c, "head_dim"));
  const double e = double(size_of(c.dtype));
  return {4 * bh * kv * d, (2 * kv * d + d) * bh * e, bh * d * e};
}

void validate(const Case& c) {
  check_range(c, "batch", 1, 1 << 16);
  check_range(c, "heads", 1, 1 << 12);
  check_range(c, "kv", 1, 1 << 24);
  check_range(c, "head_dim", 1, 1024);
}

OpDef def() {
  OpDef op = tensor::shaped_op(
      "decode_attention", "attention of one query per sequence over a KV cache of kv positions (decoding)",
      {{"batch", "1"}, {"heads", "72"}, {"kv", "2048"}, {"head_dim", "128"}},
      {{"batch", "2"}, {"heads", "3"}, {"kv", "37"}, {"head_dim", "16"}}, work, validate);
  op.model_cost = [](const Case& c) {
    return ModelCost{0, 2 * heads_total(c) * double(param(c, "kv")) * double(param(c, "head_dim"))};
  };
  // `opmeter check`: odd kv and head_dim, the fast head_dims 64 and 128 over a prime kv, the CUDA
  // kernel's widest head_dim (256), one position of one element.
  auto decode = [](int batch, int heads, int kv, int head_dim) -> Params {
    return {{"batch", std::to_string(batch)}, {"heads", std::to_string(heads)}, {"kv", std::to_string(kv)},
            {"head_dim", std::to_string(head_dim)}};
  };
  op.check_shapes = {decode(2, 3, 37, 16), decode(2, 5, 67, 64), decode(1, 2, 1031, 128), decode(1, 1, 129, 256),
                     decode(1, 1, 1, 1)};
  return op;
}
// The op, then its spec: set_spec needs the op registered (same file: no order across files).
const bool registered = [] {
  Registry::global().add(def());
  tensor::register_reference<DecodeAttentionOp>("decode_attention", {DType::fp32, DType::bf16},
                                                [](const Case& c) { return work(c).flops; });
  return true;
}();

}  // namespace
}  // namespace opmeter::decode_attention
