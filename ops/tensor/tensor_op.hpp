#pragma once
// What the tensor ops (activations, norms, losses, linear, conv, attention) share: named input
// tensors filled with random values, one output tensor viewed as rows x cols, cold-cache copies
// of both, and a correctness check against the op's fp64 reference computed row by row.
//
// Error metric: |got - ref| / mag per element, where the op's reference gives `mag`, the natural
// scale of that element (e.g. the sum of |products| for a dot product), so one tolerance per op
// and dtype holds at every size.
#include <cstdint>
#include <string>
#include <vector>

#include "opmeter/buffer.hpp"
#include "opmeter/op.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::tensor {

// Element type of a tensor: `act` is the case's dtype (fp32, or bf16 storage), the others fixed.
enum class Elem { act, f32, s32 };

struct TensorSpec {
  std::string name;
  std::size_t count = 0;
  Elem elem = Elem::act;
  double lo = -1, hi = 1;  // random fill range; for s32, integers in [lo, hi)
};

std::size_t elem_bytes(Elem e, DType d);
double load(Elem e, DType d, const void* p, std::size_t i);
void store(Elem e, DType d, void* p, std::size_t i, double v);

class TensorOp : public Impl {
 public:
  void setup(const Case& c, const SetupOptions& options) override;
  Check verify(std::uint64_t seed) override;

  // --- what an op defines (shared by all its impls) ---
  virtual std::vector<TensorSpec> inputs() const = 0;
  virtual std::size_t out_rows() const = 0;
  virtual std::size_t out_cols() const = 0;
  virtual Elem out_elem() const { return Elem::act; }
  // Reference row `row` of the output from input set `copy`, in fp64, with each element's scale.
  virtual void reference_row(std::size_t copy, std::size_t row, double* ref, double* mag) const = 0;
  // Tolerance on |got - ref| / mag for fp32 math; bf16 storage adds its rounding (see tolerance()).
  virtual double fp32_tolerance() const = 0;
  // Rough fp64 operations per reference row: bounds how many rows a check recomputes.
  virtual double reference_row_cost() const { return static_cast<double>(out_cols()); }

  double tolerance() const;
  bool bf16() const { return case_.dtype == DType::bf16; }
  const Case& kase() const { return case_; }

 protected:
  // Called once after the buffers exist (create primitives and scratch here).
  virtual void prepare() {}
  const void* in(std::size_t copy, std::size_t i) const { return sets_[copy].inputs[i].data(); }
  void* out(std::size_t copy) { return sets_[copy].output.data(); }
  double in_value(std::size_t copy, std::size_t i, std::size_t idx) const;
  std::size_t copies() const { return sets_.size(); }
  const std::vector<TensorSpec>& specs() const { return specs_; }

  Case case_;

 private:
  struct Set {
    std::vector<Buffer> inputs;
    Buffer output;
  };
  void fill(Set& s, std::uint64_t seed);
  std::vector<TensorSpec> specs_;
  std::vector<Set> sets_;
};

// The fp64 oracle as an impl: runs reference_row over every row (small cases only).
template <class Op>
class Reference : public Op {
 public:
  using Op::Op;
  void run(std::size_t copy) override {
    std::size_t rows = this->out_rows(), cols = this->out_cols();
    void* o = this->out(copy);
    Elem e = this->out_elem();
    DType d = this->case_.dtype;
#pragma omp parallel
    {
      std::vector<double> ref(cols), mag(cols);
#pragma omp for schedule(dynamic, 1)
      for (std::size_t r = 0; r < rows; ++r) {
        this->reference_row(copy, r, ref.data(), mag.data());
        for (std::size_t c = 0; c < cols; ++c) store(e, d, o, r * cols + c, ref[c]);
      }
    }
  }
};

// Cases the reference impl takes: at most this many fp64 operations in total.
constexpr double kReferenceBudget = double(1u << 30);

// Registers op `op`'s reference impl for the dtypes given; `cost` is the case's total fp64 work.
void register_reference(const std::string& op, std::vector<DType> dtypes, std::function<double(const Case&)> cost,
                        std::function<std::unique_ptr<Impl>()> make);

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
// An OpDef for a composite op measured fused and unfused (conv2d, attention): every default is a
// sweep axis, the cold-cache footprint is the unfused traffic, % of peak is against its own dtype.
using Params = std::vector<std::pair<std::string, std::string>>;
OpDef fusable_op(std::string name, std::string summary, Params defaults, Params example,
                 std::function<Work(const Case&)> fused_work, std::function<Work(const Case&)> unfused_work,
                 std::function<void(const Case&)> validate, std::function<std::string(const Case&)> pattern);
}  // namespace opmeter::tensor
