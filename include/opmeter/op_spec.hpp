#pragma once
// An op's spec: what every impl of an op shares, on every device, written once.
//
//   inputs()     the input tensors (element type, count, random range) and output() the result;
//   tolerance()  the error bound, in the op's own error metric;
//   check()      the output computed from given inputs against the op's fp64 reference (every
//                element written, a sample of elements or rows within the tolerance).
// The work model (flops, bytes) is the OpDef's `work` (registry.hpp), also one per op.
//
// Inputs are random, deterministic from a seed and the same on every device: make_inputs(seed)
// draws them on the host (but an input same_in_every_set() names, such as a quantized layer's
// weights, from a fixed stream: the same for every seed, so a check cannot catch stale copies of
// it, only wrong use). A CPU impl (HostImpl below) computes on host inputs in place; a device
// impl uploads the same host inputs, runs, and brings its output back for the same check
// (verify_on_device below). Outputs are poisoned before a check so unwritten elements show.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "opmeter/buffer.hpp"
#include "opmeter/op.hpp"

namespace opmeter {

// How one element is stored, the same in host and in device memory.
enum class Elem { f64, f32, f16, bf16, fp8_e4m3, s8, u8, s32 };

std::size_t elem_bytes(Elem e);
// Round to nearest into e errs by at most this, relative (2^-p for p significant bits; f64 and
// integers: fp32's, as the float formats' least).
double unit_roundoff(Elem e);
// Its name where elements cross a process boundary: f64 f32 f16 bf16 fp8_e4m3 s8 u8 s32.
const char* elem_name(Elem e);
// Element i as the reference reads it (exactly). An s32 equal to the poison reads as NaN.
double load(Elem e, const void* p, std::size_t i);
// v rounded to nearest (even) in e; integers are truncated toward zero.
void store(Elem e, void* p, std::size_t i, double v);
// The byte that, repeated, marks unwritten output: NaN in every float type, and for s32 a value
// no result of ours reaches (0x7f7f7f7f). 8-bit integers cannot be poisoned (never outputs).
int poison_byte(Elem e);

// One tensor an op reads or writes.
struct TensorDesc {
  std::string name;
  Elem elem = Elem::f32;
  std::size_t count = 0;
  double lo = -1, hi = 1;  // an input's random range; integer types draw integers in [lo, hi)
  // Floats drawn from the normal distribution of mean (lo + hi) / 2 and standard deviation
  // (hi - lo) / 2, unclipped, instead of uniformly in [lo, hi) (weights with a Gaussian's tails).
  bool normal = false;
  std::size_t bytes() const { return count * elem_bytes(elem); }
};

// A tensor in host memory.
class HostTensor {
 public:
  explicit HostTensor(TensorDesc desc);
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;
  HostTensor(const HostTensor&) = delete;  // a second name for the memory is share()'s, said so
  HostTensor& operator=(const HostTensor&) = delete;
  // The same memory under another tensor (cold-cache sets that share a lookup table).
  HostTensor share() const { return HostTensor(desc_, buffer_); }
  const TensorDesc& desc() const { return desc_; }
  void* data() { return buffer_->data(); }
  const void* data() const { return buffer_->data(); }
  std::size_t bytes() const { return desc_.bytes(); }
  template <class T> const T* as() const { return buffer_->as<T>(); }
  double operator[](std::size_t i) const { return load(desc_.elem, buffer_->data(), i); }
  void poison();

 private:
  HostTensor(TensorDesc desc, std::shared_ptr<Buffer> buffer) : desc_(std::move(desc)), buffer_(std::move(buffer)) {}
  TensorDesc desc_;
  std::shared_ptr<Buffer> buffer_;  // at least one byte, so that every tensor has an address
};
using HostTensors = std::vector<HostTensor>;

// Random values in desc's range: chunks of 1 Mi elements, each from its own stream of `seed`,
// drawn in parallel (an 8192^2 operand takes seconds on one core). Thread count never changes them.
void fill_random(const TensorDesc& desc, void* p, std::uint64_t seed);

class OpSpec {
 public:
  virtual ~OpSpec() = default;
  // Sizes and types come from the case: called first, by an impl's setup.
  virtual void bind(const Case& c) = 0;
  virtual std::vector<TensorDesc> inputs() const = 0;
  virtual TensorDesc output() const = 0;
  virtual double tolerance() const = 0;
  // `out` was computed from `in`; `seed` picks the sampled elements.
  virtual Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const = 0;

  // Whether input k holds the same values in every input set of a case (a quantized layer's
  // weights: preparing them, as a deployment would once, costs more than the case's checks; the
  // checks still vary everything else). Such an input is drawn from its own fixed stream.
  virtual bool same_in_every_set(std::size_t /*input*/) const { return false; }
  // Whether input k is one (same_in_every_set) that every host impl prepares into copies of its
  // own and never reads in its calls (a quantized layer's weights, read packed): host sets share
  // one tensor of it, kept to check results, and the case's peak memory leaves it out.
  virtual bool kept_for_checks(std::size_t /*input*/) const { return false; }
  // What input k becomes before the impls' arithmetic reads it, where that is not its element
  // type: a quantized layer's weights (codes and scales) or its activations quantized on every
  // call. Empty for an input read as it is. Recorded with the case's element types.
  virtual std::string held_as(std::size_t /*input*/) const { return ""; }

  // Whether input k is a lookup table that the other inputs index (an embedding's): a call reads
  // only the rows they name. Cold-cache sets of such an op draw their own indices (set_seed), so
  // that calls in turn gather other rows, and may share copies of the tables (table_copies).
  virtual bool is_table(std::size_t /*input*/) const { return false; }
  bool has_tables() const;
  double table_bytes() const;  // of the inputs, in the tables

  // The inputs for `seed`: input k from its own stream, so adding an input changes no other.
  HostTensors make_inputs(std::uint64_t seed) const;
  void fill_inputs(HostTensors& in, std::uint64_t seed) const;
  void fill_input(HostTensor& in, std::size_t k, std::uint64_t seed) const;  // input k alone
};

// The seed that cold-cache set `set` >= 1 draws its own inputs for (an op with tables: every
// input but the tables), from the case's `seed`.
std::uint64_t set_seed(std::uint64_t seed, std::size_t set);
// Which set's copy of a table set `set` reads: its own below `table_copies` (0: every set), else
// that of set `set % table_copies`.
inline std::size_t table_owner(std::size_t set, std::size_t table_copies) {
  return table_copies == 0 || set < table_copies ? set : set % table_copies;
}

// --- CPU impls: the spec's tensors in host memory, used in place ---

struct HostSet {
  HostTensors inputs;
  HostTensor output;
};
// `copies` sets (cold-cache rotation): set 0 filled for `seed`, the others copies of it (they
// only need to live at other addresses, and copying is much faster than drawing). An op with
// tables: the others draw their indices (set_seed) and read the tables table_owner() says. An
// input kept only for checks (OpSpec::kept_for_checks) is set 0's in every set.
std::vector<HostSet> make_host_sets(const OpSpec& spec, const SetupOptions& options);
// Fresh inputs for `seed` into `set`, poisoned output, run() (computes into `set`), spec's check.
Check verify_on_host(const OpSpec& spec, HostSet& set, std::uint64_t seed, const std::function<void()>& run);

// An impl computing on the host: derive from HostImpl<TheOpSpec>, implement run(copy) (and
// prepare() for library handles). in(copy, i) / out(copy) are the tensors of set `copy`.
template <class Spec>
class HostImpl : public Impl, public Spec {
 public:
  using Spec::Spec;
  void setup(const Case& c, const SetupOptions& options) override {
    this->bind(c);
    sets_ = make_host_sets(*this, options);
    prepare();
  }
  bool shares_tables() const override { return true; }
  std::size_t check_only_bytes() const override {
    std::size_t bytes = 0;
    for (std::size_t k = 0; !sets_.empty() && k < sets_[0].inputs.size(); ++k)
      if (this->kept_for_checks(k)) bytes += sets_[0].inputs[k].bytes();
    return bytes;
  }
  Check verify(std::uint64_t seed) override {
    return verify_on_host(*this, sets_.at(0), seed, [this] {
      prepare();  // impls that transform inputs once (reordered, folded weights) see the new ones
      run(0);
      sync();
    });
  }

 protected:
  // After the inputs are filled: in setup and again before each check.
  virtual void prepare() {}
  const void* in(std::size_t copy, std::size_t i) const { return sets_[copy].inputs[i].data(); }
  void* in(std::size_t copy, std::size_t i) { return sets_[copy].inputs[i].data(); }
  void* out(std::size_t copy) { return sets_[copy].output.data(); }
  const HostTensors& host_inputs(std::size_t copy) const { return sets_[copy].inputs; }
  std::size_t copies() const { return sets_.size(); }

 private:
  std::vector<HostSet> sets_;
};

// --- device impls: the same host inputs, uploaded; the output brought back for the check ---

// How a device impl moves its tensors, with its own memory API and stream: copy host input
// `input` into its device buffer, fill the device output with a byte, copy the output back.
struct DeviceIo {
  std::function<void(std::size_t input, const HostTensor& host)> upload;
  std::function<void(int byte)> fill_output;
  std::function<void(HostTensor& host)> download_output;
};
// The inputs for `seed`, drawn on the host and uploaded (setup).
void upload_inputs(const OpSpec& spec, std::uint64_t seed, const DeviceIo& io);
// Fresh inputs for `seed` uploaded, the device output poisoned, run() (computes and waits), the
// output downloaded and checked by the spec against those same host inputs.
Check verify_on_device(const OpSpec& spec, std::uint64_t seed, const DeviceIo& io, const std::function<void()>& run);

}  // namespace opmeter
