#include "ops/tensor/tensor_op.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter::tensor {
namespace {
constexpr std::int32_t kS32Poison = std::numeric_limits<std::int32_t>::min();
constexpr double kCheckBudget = double(1u << 27);  // fp64 operations one check may spend
constexpr std::size_t kMaxCheckedRows = 4096;
}  // namespace

std::size_t elem_bytes(Elem e, DType d) {
  if (e == Elem::act) return d == DType::bf16 ? 2 : 4;
  return 4;
}

double load(Elem e, DType d, const void* p, std::size_t i) {
  if (e == Elem::s32) return static_cast<const std::int32_t*>(p)[i];
  if (e == Elem::act && d == DType::bf16) return from_bf16(static_cast<const std::uint16_t*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

void store(Elem e, DType d, void* p, std::size_t i, double v) {
  if (e == Elem::s32) static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v);
  else if (e == Elem::act && d == DType::bf16) static_cast<std::uint16_t*>(p)[i] = to_bf16(static_cast<float>(v));
  else static_cast<float*>(p)[i] = static_cast<float>(v);
}

double TensorOp::tolerance() const {
  // bf16 storage: inputs are exact bf16 values, but every bf16 rounding on the way (output,
  // intermediates of unfused sequences) costs up to 2^-9 of |value| <= mag.
  return fp32_tolerance() + (bf16() ? 4 * 0x1p-8 : 0.0);
}

double TensorOp::in_value(std::size_t copy, std::size_t i, std::size_t idx) const {
  return load(specs_[i].elem, case_.dtype, sets_[copy].inputs[i].data(), idx);
}

void TensorOp::setup(const Case& c, const SetupOptions& options) {
  case_ = c;
  specs_ = inputs();
  sets_.clear();
  for (std::size_t k = 0; k < options.copies; ++k) {
    Set s;
    for (auto& spec : specs_) s.inputs.emplace_back(std::max<std::size_t>(1, spec.count * elem_bytes(spec.elem, c.dtype)));
    s.output = Buffer(std::max<std::size_t>(1, out_rows() * out_cols() * elem_bytes(out_elem(), c.dtype)));
    sets_.push_back(std::move(s));
  }
  fill(sets_[0], options.seed);
  // Other copies only need to live at other addresses.
  for (std::size_t k = 1; k < sets_.size(); ++k)
    for (std::size_t i = 0; i < specs_.size(); ++i)
      std::memcpy(sets_[k].inputs[i].data(), sets_[0].inputs[i].data(), sets_[0].inputs[i].bytes());
  prepare();
}

void TensorOp::fill(Set& s, std::uint64_t seed) {
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    Rng rng(seed + 7919 * i);
    const auto& spec = specs_[i];
    void* p = s.inputs[i].data();
    if (spec.elem == Elem::s32) {
      auto span = static_cast<std::uint64_t>(spec.hi - spec.lo);
      for (std::size_t k = 0; k < spec.count; ++k)
        static_cast<std::int32_t*>(p)[k] = static_cast<std::int32_t>(spec.lo) + static_cast<std::int32_t>(rng.next() % span);
    } else {
      for (std::size_t k = 0; k < spec.count; ++k) store(spec.elem, case_.dtype, p, k, rng.uniform(spec.lo, spec.hi));
    }
  }
}

Check TensorOp::verify(std::uint64_t seed) {
  auto& s = sets_.at(0);
  fill(s, seed);
  prepare();  // impls that transform inputs once (reordered or BN-folded weights) see the new ones
  const std::size_t rows = out_rows(), cols = out_cols(), n = rows * cols;
  const Elem oe = out_elem();
  for (std::size_t i = 0; i < n; ++i) {
    if (oe == Elem::s32) store(oe, case_.dtype, s.output.data(), i, kS32Poison);
    else store(oe, case_.dtype, s.output.data(), i, std::numeric_limits<double>::quiet_NaN());
  }
  run(0);
  sync();

  Check check;
  check.tolerance = tolerance();
  // Every element written (no poison left), then a sample of rows against the fp64 reference.
  for (std::size_t i = 0; i < n; ++i) {
    double v = load(oe, case_.dtype, s.output.data(), i);
    if (std::isnan(v) || (oe == Elem::s32 && v == kS32Poison)) {
      check.max_error = std::numeric_limits<double>::infinity();
      check.detail = fmt::format("output[{},{}] was not written (still poisoned) or is NaN", i / cols, i % cols);
      return check;
    }
  }
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
  struct Worst {
    double err = -1;
    std::size_t row = 0, col = 0;
    double got = 0, ref = 0;
  };
  std::vector<Worst> worst(picks.size());
#pragma omp parallel
  {
    std::vector<double> ref(cols), mag(cols);
#pragma omp for schedule(dynamic, 1)
    for (std::size_t p = 0; p < picks.size(); ++p) {
      reference_row(0, picks[p], ref.data(), mag.data());
      for (std::size_t c = 0; c < cols; ++c) {
        double got = load(oe, case_.dtype, s.output.data(), picks[p] * cols + c);
        // Equal values (masked -inf scores included) are exact; otherwise scaled distance.
        double err = got == ref[c] ? 0.0 : std::fabs(got - ref[c]) / (mag[c] > 0 ? mag[c] : 1.0);
        if (!(err <= worst[p].err)) worst[p] = {err, picks[p], c, got, ref[c]};
      }
    }
  }
  auto w = *std::max_element(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.err < b.err; });
  check.max_error = w.err;
  check.ok = w.err <= check.tolerance;
  check.detail = fmt::format("max scaled error {:.3g} at [{},{}] (got {:.7g}, expected {:.7g}) over {} checked rows "
                             "(tolerance {:.3g})",
                             w.err, w.row, w.col, w.got, w.ref, picks.size(), check.tolerance);
  return check;
}

void register_reference(const std::string& op, std::vector<DType> dtypes, std::function<double(const Case&)> cost,
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

}  // namespace opmeter::tensor
