// The pool2d op: parameters, validation, work model, and its spec and fp64 reference impl (pool.hpp).
// NCHW max or average pooling; global average pooling is kind=avg with kernel=image, stride=1,
// padding=0. Average pooling divides by kernel^2, padding included (PyTorch's default).
#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/tensor_op.hpp"
#include "ops/pool/pool.hpp"

namespace opmeter::pool {
namespace {

using tensor::check_range;
using tensor::param;

std::size_t out_size(const Case& c) {
  return (param(c, "image") + 2 * param(c, "padding") - param(c, "kernel")) / param(c, "stride") + 1;
}

Work work(const Case& c) {
  const double planes = double(param(c, "batch")) * double(param(c, "channels"));
  const double in = planes * double(param(c, "image") * param(c, "image")), out = planes * double(out_size(c) * out_size(c));
  const double k = double(param(c, "kernel") * param(c, "kernel")), e = double(size_of(c.dtype));
  return {out * k, in * e, out * e};
}

void validate(const Case& c) {
  check_range(c, "batch", 1, 1 << 16);
  check_range(c, "channels", 1, 1 << 16);
  check_range(c, "image", 1, 1 << 14);
  check_range(c, "kernel", 1, 1 << 14);
  check_range(c, "stride", 1, 1 << 14);
  check_range(c, "padding", 0, 1 << 13);
  const auto& kind = c.get("kind");
  if (!parse_kind(kind)) throw CaseError(fmt::format("pool2d kind='{}' unknown: expected max or avg", kind));
  if (2 * param(c, "padding") > param(c, "kernel"))
    throw CaseError(fmt::format("pool2d padding={} above half the kernel ({})", param(c, "padding"), param(c, "kernel")));
  if (param(c, "kernel") > param(c, "image") + 2 * param(c, "padding"))
    throw CaseError(fmt::format("pool2d kernel={} larger than the padded image ({})", param(c, "kernel"),
                                param(c, "image") + 2 * param(c, "padding")));
}

const bool registered = [] {
  OpDef op = tensor::shaped_op(
      "pool2d", "2-D max or average pooling, NCHW (global average: kind=avg, kernel=image)",
      {{"batch", "1"}, {"channels", "64"}, {"image", "112"}, {"kernel", "3"}, {"stride", "2"}, {"padding", "1"},
       {"kind", "max"}},
      {{"batch", "2"}, {"channels", "3"}, {"image", "9"}, {"kernel", "3"}, {"stride", "2"}, {"padding", "1"},
       {"kind", "max"}},
      work, validate);
  // `opmeter check`: padded windows at odd images, an even window over an odd image (a ragged
  // last column), global average, one element.
  auto pool = [](int batch, int channels, int image, int kernel, int stride, int padding, const char* kind) -> Params {
    return {{"batch", std::to_string(batch)},   {"channels", std::to_string(channels)}, {"image", std::to_string(image)},
            {"kernel", std::to_string(kernel)}, {"stride", std::to_string(stride)},     {"padding", std::to_string(padding)},
            {"kind", kind}};
  };
  op.check_shapes = {op.example, pool(1, 5, 13, 3, 2, 1, "avg"), pool(2, 3, 17, 2, 2, 0, "max"), pool(1, 7, 7, 7, 1, 0, "avg"),
                     pool(1, 1, 1, 1, 1, 0, "max")};
  Registry::global().add(std::move(op));
  tensor::register_reference<PoolOp>("pool2d", {DType::fp32, DType::bf16}, [](const Case& c) { return work(c).flops; });
  return true;
}();

}  // namespace
}  // namespace opmeter::pool
