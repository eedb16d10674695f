// The add op: parameters, work model and the spec its impls share.
#include "ops/add/add.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "opmeter/context.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/tensor_op.hpp"

namespace opmeter::add {
namespace {

OpDef add_op() {
  OpDef op = tensor::rows_op("add", "C = A + B elementwise (residual connection), sum formed in fp32", work);
  op.spec = [] { return std::make_unique<AddSpec>(); };
  op.check_shapes = tensor::row_check_shapes(op.example);
  return op;
}
OpRegistrar reg_add(add_op());

}  // namespace

std::size_t elements(const Case& c) { return tensor::rows_of(c) * tensor::hidden_of(c); }

Work work(const Case& c) {
  const double n = static_cast<double>(elements(c)), bytes = n * static_cast<double>(size_of(c.dtype));
  return {n, 2 * bytes, bytes};
}

void AddSpec::bind(const Case& c) {
  case_ = c;
  n_ = elements(c);
  elem_ = c.dtype == DType::bf16 ? Elem::bf16 : c.dtype == DType::fp16 ? Elem::f16 : Elem::f32;
}

double AddSpec::tolerance() const { return 2 * unit_roundoff(elem_); }

Check AddSpec::check(const HostTensors& in, const HostTensor& out, std::uint64_t) const {
  const HostTensor &a = in.at(kA), &b = in.at(kB);
  Check check;
  check.tolerance = tolerance();
  double worst = 0;
  std::size_t at = 0, unwritten = n_;
#pragma omp parallel num_threads(default_threads())
  {
    double my_worst = 0;
    std::size_t my_at = 0, my_unwritten = n_;
#pragma omp for schedule(static) nowait
    for (std::size_t i = 0; i < n_; ++i) {
      const double got = out[i], x = a[i], y = b[i];
      if (std::isnan(got)) {
        my_unwritten = std::min(my_unwritten, i);
        continue;
      }
      const double mag = std::fabs(x) + std::fabs(y);
      const double err = std::fabs(got - (x + y)) / (mag > 0 ? mag : 1.0);
      if (!(err <= my_worst)) my_worst = err, my_at = i;
    }
#pragma omp critical
    {
      unwritten = std::min(unwritten, my_unwritten);
      if (my_worst > worst || (my_worst == worst && my_at < at)) worst = my_worst, at = my_at;
    }
  }
  if (unwritten < n_) {
    check.max_error = std::numeric_limits<double>::infinity();
    check.detail = fmt::format("C[{}] was not written (still poisoned) or is NaN", unwritten);
    return check;
  }
  check.max_error = worst;
  check.ok = worst <= check.tolerance;
  check.detail = fmt::format("max scaled error {:.3g} at C[{}] (got {:.7g}, expected {:.7g}) over all {} elements "
                             "(tolerance {:.3g})",
                             worst, at, out[at], a[at] + b[at], n_, check.tolerance);
  return check;
}

}  // namespace opmeter::add
