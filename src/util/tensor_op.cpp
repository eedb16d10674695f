#include "opmeter/tensor_op.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter::tensor {
namespace {
constexpr double kCheckBudget = double(1u << 27);  // fp64 operations one check may spend
constexpr std::size_t kMaxCheckedRows = 4096;
}  // namespace

double TensorOp::tolerance() const {
  // 16-bit storage: inputs are exact 16-bit values, but every rounding on the way (output,
  // intermediates of unfused sequences) costs up to the unit roundoff (bf16 2^-8, fp16 2^-11) of
  // |value| <= mag.
  const double storage = bf16() ? 4 * 0x1p-8 : case_.dtype == DType::fp16 ? 4 * 0x1p-11 : 0.0;
  return fp32_tolerance() + storage;
}

Check TensorOp::check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const {
  const std::size_t rows = out_rows(), cols = out_cols(), n = rows * cols;
  Check check;
  check.tolerance = tolerance();
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(out[i])) {
      check.max_error = std::numeric_limits<double>::infinity();
      check.detail = fmt::format("output[{},{}] was not written (still poisoned) or is NaN", i / cols, i % cols);
      return check;
    }
  }
  const std::vector<std::size_t> picks = check_rows(seed);
  struct Worst {
    double err = -1;
    std::size_t row = 0, col = 0;
    double got = 0, ref = 0;
  };
  std::vector<Worst> worst(picks.size());
  // fp16 stores magnitudes below 2^-14 as subnormals, 2^-24 apart: no element's scale is finer
  // than that smallest normal.
  const double least_mag = case_.dtype == DType::fp16 ? 0x1p-14 : 0.0;
  reference_rows(in, picks, [&](std::size_t p, const double* ref, const double* mag) {
    for (std::size_t c = 0; c < cols; ++c) {
      double got = out[picks[p] * cols + c];
      // Equal values (masked -inf scores included) are exact; otherwise scaled distance.
      const double m = std::max(mag[c], least_mag);
      double err = got == ref[c] ? 0.0 : std::fabs(got - ref[c]) / (m > 0 ? m : 1.0);
      if (!(err <= worst[p].err)) worst[p] = {err, picks[p], c, got, ref[c]};
    }
  });
  auto w = *std::max_element(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.err < b.err; });
  check.max_error = w.err;
  check.ok = w.err <= check.tolerance;
  check.detail = fmt::format("max scaled error {:.3g} at [{},{}] (got {:.7g}, expected {:.7g}) over {} checked rows "
                             "(tolerance {:.3g})",
                             w.err, w.row, w.col, w.got, w.ref, picks.size(), check.tolerance);
  return check;
}

std::vector<std::size_t> TensorOp::check_rows(std::uint64_t seed) const {
  const std::size_t rows = out_rows();
  auto budget_rows = static_cast<std::size_t>(std::max(2.0, kCheckBudget / std::max(1.0, reference_row_cost())));
  std::size_t checked = std::min({rows, budget_rows, kMaxCheckedRows});
  std::vector<std::size_t> picks;
  if (checked == rows) {
    for (std::size_t r = 0; r < rows; ++r) picks.push_back(r);
  } else {
    Rng rng(seed ^ 0x5eed);
    picks = {0, rows - 1};
    while (picks.size() < checked) picks.push_back(rng.next() % rows);
  }
  return picks;
}

void TensorOp::reference_rows(const HostTensors& in, const std::vector<std::size_t>& rows, const RowSink& each) const {
  const std::size_t cols = out_cols();
#pragma omp parallel
  {
    std::vector<double> ref(cols), mag(cols);
#pragma omp for schedule(dynamic, 1)
    for (std::size_t p = 0; p < rows.size(); ++p) {
      reference_row(in, rows[p], ref.data(), mag.data());
      each(p, ref.data(), mag.data());
    }
  }
}

void register_reference_impl(const std::string& op, std::vector<DType> dtypes, std::function<double(const Case&)> cost,
                             std::function<std::unique_ptr<Impl>()> make) {
  Registry::global().add(ImplDef{
      .op = op,
      .impl = "reference",
      .summary = "simple fp64 loops: the correctness oracle (small cases)",
      .dtypes = std::move(dtypes),
      .supports = [cost](const Case& c) {
        double ops = cost(c);
        if (ops > kReferenceBudget)
          return Support::no(fmt::format("reference is for small cases: {:.3g} fp64 operations > {:.3g}", ops, kReferenceBudget));
        return Support::yes();
      },
      .make = std::move(make),
  });
}

std::size_t param(const Case& c, const std::string& key) { return static_cast<std::size_t>(c.get_int(key)); }

void check_range(const Case& c, const std::string& key, std::int64_t lo, std::int64_t hi) {
  auto v = c.get_int(key);
  if (v < lo || v > hi) throw CaseError(fmt::format("{} {}={} out of range: expected {}..{}", c.op, key, v, lo, hi));
}

}  // namespace opmeter::tensor

namespace opmeter::tensor {

std::size_t rows_of(const Case& c) { return param(c, "batch") * param(c, "seq"); }
std::size_t hidden_of(const Case& c) { return param(c, "hidden"); }

OpDef fusable_op(std::string name, std::string summary, Params defaults, Params example,
                 std::function<Work(const Case&)> fused_work, std::function<Work(const Case&)> unfused_work,
                 std::function<void(const Case&)> validate, std::function<std::string(const Case&)> pattern) {
  OpDef op;
  op.name = std::move(name);
  op.summary = std::move(summary);
  op.defaults = std::move(defaults);
  for (auto& [key, v] : op.defaults) op.params.push_back(key);
  op.example = std::move(example);
  op.work = std::move(fused_work);
  op.footprint = [unfused_work](const Case& c) { return unfused_work(c).bytes(); };
  op.validate = std::move(validate);
  op.peak_dtype = [](const Case& c) -> std::optional<DType> { return c.dtype; };
  op.fusion_pattern = std::move(pattern);
  op.unfused_work = std::move(unfused_work);
  return op;
}

OpDef shaped_op(std::string name, std::string summary, Params defaults, Params example,
                std::function<Work(const Case&)> work, std::function<void(const Case&)> validate) {
  OpDef op;
  op.name = std::move(name);
  op.summary = std::move(summary);
  op.defaults = std::move(defaults);
  for (auto& [key, v] : op.defaults) op.params.push_back(key);
  op.example = std::move(example);
  op.work = work;
  op.footprint = [work](const Case& c) { return work(c).bytes(); };
  op.validate = std::move(validate);
  op.peak_dtype = [](const Case& c) -> std::optional<DType> { return c.dtype == DType::bf16 ? DType::fp32 : c.dtype; };
  return op;
}

OpDef rows_op(std::string name, std::string summary, std::function<Work(const Case&)> work,
              std::vector<std::pair<std::string, std::string>> extra) {
  OpDef op;
  op.name = std::move(name);
  op.summary = std::move(summary);
  op.params = {"batch", "seq", "hidden"};
  op.defaults = {{"batch", "16"}, {"seq", "512"}, {"hidden", "4096"}};
  op.example = {{"batch", "2"}, {"seq", "3"}, {"hidden", "37"}};
  for (auto& [k, v] : extra) {
    op.params.push_back(k);
    op.defaults.emplace_back(k, v);
    op.example.emplace_back(k, v);
  }
  op.work = work;
  op.footprint = [work](const Case& c) { return work(c).bytes(); };
  op.validate = [](const Case& c) {
    check_range(c, "batch", 1, 1 << 20);
    check_range(c, "seq", 1, 1 << 20);
    check_range(c, "hidden", 1, 1 << 20);
    if (static_cast<double>(rows_of(c)) * static_cast<double>(hidden_of(c)) > double(std::int64_t{1} << 36))
      throw CaseError(fmt::format("{}: batch*seq*hidden above 2^36 elements", c.op));
  };
  op.peak_dtype = [](const Case& c) -> std::optional<DType> { return c.dtype == DType::bf16 ? DType::fp32 : c.dtype; };
  return op;
}

std::vector<Params> row_check_shapes(const Params& example) {
  auto rows = [&](int batch, int seq, int hidden) {
    Params p = example;
    for (auto& [k, v] : p) {
      if (k == "batch") v = std::to_string(batch);
      if (k == "seq") v = std::to_string(seq);
      if (k == "hidden") v = std::to_string(hidden);
    }
    return p;
  };
  return {rows(2, 5, 263), rows(1, 1, 1), rows(1, 1, 65537), rows(3, 7, 64)};
}

}  // namespace opmeter::tensor
