#pragma once
// The spec the tensor ops (activations, norms, losses, linear, conv, attention) share: named
// input tensors filled with random values, one output tensor viewed as rows x cols, and a
// correctness check against the op's fp64 reference computed row by row. It holds no buffers:
// the op's CPU impls derive from HostImpl<TheOp> (op_spec.hpp) and compute on the host inputs
// in place; a device impl uploads the same host inputs and downloads its output for the same
// check (verify_on_device).
//
// Error metric: |got - ref| / mag per element, where the op's reference gives `mag`, the natural
// scale of that element (e.g. the sum of |products| for a dot product), so one tolerance per op
// and dtype holds at every size.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "opmeter/op_spec.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::tensor {

class TensorOp : public OpSpec {
 public:
  void bind(const Case& c) override { case_ = c; }
  TensorDesc output() const override { return {"out", out_elem(), out_rows() * out_cols()}; }
  // fp32_tolerance(); 16-bit storage adds its rounding.
  double tolerance() const override;
  // Every element written (no poison left), then a sample of rows against reference_row.
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;

  // --- what an op defines (shared by all its impls), besides inputs() ---
  virtual std::size_t out_rows() const = 0;
  virtual std::size_t out_cols() const = 0;
  virtual Elem out_elem() const { return act(); }
  // Reference row `row` of the output for inputs `in`, in fp64, with each element's scale.
  virtual void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const = 0;
  // Tolerance on |got - ref| / mag for fp32 math.
  virtual double fp32_tolerance() const = 0;
  // Rough fp64 operations per reference row: bounds how many rows a check recomputes.
  virtual double reference_row_cost() const { return static_cast<double>(out_cols()); }
  // The rows a check compares: all of them, or a random sample within the check's budget.
  virtual std::vector<std::size_t> check_rows(std::uint64_t seed) const;
  // Reference rows `rows` (in any order), each handed to `each(index in rows, ref, mag)` from any
  // thread. Default: reference_row per row in parallel. Ops whose rows share work (a sequence's
  // keys and values) override it to do that work once.
  using RowSink = std::function<void(std::size_t index, const double* ref, const double* mag)>;
  virtual void reference_rows(const HostTensors& in, const std::vector<std::size_t>& rows, const RowSink& each) const;

  // Activations are stored in the case's dtype: fp32, bf16 or (device impls) fp16, fp32 math.
  Elem act() const { return bf16() ? Elem::bf16 : case_.dtype == DType::fp16 ? Elem::f16 : Elem::f32; }
  bool bf16() const { return case_.dtype == DType::bf16; }
  const Case& kase() const { return case_; }

 protected:
  // An fp32 input vector (bias, gamma, ...).
  static const float* vec(const HostTensors& in, std::size_t i) { return in[i].as<float>(); }
  Case case_;
};

// The fp64 oracle as an impl: runs reference_row over every row (small cases only).
template <class Op>
class Reference : public HostImpl<Op> {
 public:
  using HostImpl<Op>::HostImpl;
  void run(std::size_t copy) override {
    std::size_t rows = this->out_rows(), cols = this->out_cols();
    void* o = this->out(copy);
    Elem e = this->out_elem();
    std::vector<std::size_t> all(rows);
    for (std::size_t r = 0; r < rows; ++r) all[r] = r;
    this->reference_rows(this->host_inputs(copy), all, [&](std::size_t r, const double* ref, const double*) {
      for (std::size_t c = 0; c < cols; ++c) store(e, o, r * cols + c, ref[c]);
    });
  }
};

// Cases the reference impl takes: at most this many fp64 operations in total.
constexpr double kReferenceBudget = double(1u << 30);

void register_reference_impl(const std::string& op, std::vector<DType> dtypes, std::function<double(const Case&)> cost,
                             std::function<std::unique_ptr<Impl>()> make);

// Registers op `op`'s spec (OpDef::spec) and its fp64 reference impl for the dtypes given, both
// made of the op's spec class `Op` constructed from `args`; `cost` is the case's total fp64 work.
template <class Op, class... Args>
void register_reference(const std::string& op, std::vector<DType> dtypes, std::function<double(const Case&)> cost,
                        Args... args) {
  Registry::global().set_spec(op, [args...] { return std::make_unique<Op>(args...); });
  register_reference_impl(op, std::move(dtypes), std::move(cost), [args...] { return std::make_unique<Reference<Op>>(args...); });
}

// Parameter helpers shared by the tensor ops.
std::size_t param(const Case& c, const std::string& key);
void check_range(const Case& c, const std::string& key, std::int64_t lo, std::int64_t hi);

}  // namespace opmeter::tensor

namespace opmeter::tensor {
// Ops over activations shaped batch x seq x hidden, seen as rows (batch * seq) x hidden.
std::size_t rows_of(const Case& c);
std::size_t hidden_of(const Case& c);
// An OpDef with the batch/seq/hidden parameters, their defaults and validation filled in; `extra`
// parameters (name, default) follow them.
OpDef rows_op(std::string name, std::string summary, std::function<Work(const Case&)> work,
              std::vector<std::pair<std::string, std::string>> extra = {});
// `opmeter check`'s shapes of an op over rows (OpDef::check_shapes), its other parameters as in
// `example`: first rows of an odd prime width with a tail past every vector width, then one
// element, one row 2^16 + 1 wide (a reduction in many passes) and rows exactly a vector wide.
std::vector<std::vector<std::pair<std::string, std::string>>> row_check_shapes(
    const std::vector<std::pair<std::string, std::string>>& example);
// An OpDef whose every default is a sweep axis (pooling, squeeze-excite, decode attention): the
// footprint is the work's bytes, % of peak is against fp32 for bf16 (its math runs in fp32).
using Params = std::vector<std::pair<std::string, std::string>>;
OpDef shaped_op(std::string name, std::string summary, Params defaults, Params example,
                std::function<Work(const Case&)> work, std::function<void(const Case&)> validate);
// An OpDef for a composite op measured fused and unfused (conv2d, attention): every default is a
// sweep axis, the cold-cache footprint is the unfused traffic, % of peak is against its own dtype.
OpDef fusable_op(std::string name, std::string summary, Params defaults, Params example,
                 std::function<Work(const Case&)> fused_work, std::function<Work(const Case&)> unfused_work,
                 std::function<void(const Case&)> validate, std::function<std::string(const Case&)> pattern);
}  // namespace opmeter::tensor
