#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "opmeter/gemm_view.hpp"
#include "opmeter/op.hpp"
#include "opmeter/op_config.hpp"
#include "opmeter/op_spec.hpp"

namespace opmeter {

struct Result;

// Which ceiling an op's results measure: none, the compute peak of a dtype, or memory bandwidth.
// Ceiling results run first, and every later result is shown as a share of them.
enum class CeilingKind { none, compute, memory };

// Parameters and multiply-adds of one call of a case (see OpDef::model_cost).
struct ModelCost {
  double params = 0;
  double macs = 0;
};

// A parameter a case carries only when it differs from its `absent` value, so that adding one
// to an op keeps every existing case string (linear's `quant`, a recipe; `mode=train`). A config
// sweeps it with the list under `config_key`; only impls that name it (ImplDef::needs/accepts)
// run cases that carry it.
struct OptionalParam {
  std::string key;         // in the case string: quant=int4wo-64
  std::string config_key;  // in a config: quantization: [baseline, int4wo-64]
  std::string absent;      // its value where a case does not carry it: baseline
  std::string help;        // what it is, for messages and `opmeter list`
  std::vector<std::string> values;  // the values it takes (a config is checked against them)
};

// An op: what every impl of it shares (parameters, work model, memory footprint).
struct OpDef {
  std::string name;
  std::string summary;
  std::vector<std::string> params;  // keys every case carries, in canonical order
  // Parameters of a small valid case (used to probe which impls run here, e.g. by `opmeter list`).
  std::vector<std::pair<std::string, std::string>> example;
  // Default value of each parameter a config does not sweep (ops with sweep axes: a config key
  // named like a parameter gives its list of values). Empty for ops with their own expansion.
  std::vector<std::pair<std::string, std::string>> defaults;
  // Parameters a case may carry (see OptionalParam), after `params` in the case string.
  std::vector<OptionalParam> optional_params;
  // Ops shaped like a GEMM (linear layers) also take the `shapes` generators: [m, k, n] -> params.
  std::function<std::vector<std::pair<std::string, std::string>>(std::int64_t m, std::int64_t k, std::int64_t n)>
      from_matrix_shape;
  std::function<Work(const Case&)> work;
  // Bytes of one input+output set: sizes cold-cache copies and the fits-in-memory check.
  std::function<double(const Case&)> footprint;
  // Throws CaseError when a case's parameters are missing or out of range.
  std::function<void(const Case&)> validate;
  // Whether the op reads inputs from memory (peak kernels do not: no cold copies).
  bool uses_memory = true;
  // Which measured ceiling a case's GFLOP/s is a percentage of (peak op's dtype); none if empty.
  std::function<std::optional<DType>(const Case&)> peak_dtype;
  // Whether the op's own results are a ceiling, and for such an op the cases that measure its
  // ceiling of `dtype` where `like` runs (a memory ceiling's arrays have `elements` fp32
  // elements); empty where it has none.
  CeilingKind ceiling = CeilingKind::none;
  std::function<std::vector<Case>(DType dtype, const Case& like, std::size_t elements)> ceiling_cases;
  // Fusion patterns: the pattern a case is (e.g. "linear+bias+gelu"), and the memory traffic of
  // the same math as separate ops with intermediates in memory. Empty for other ops.
  std::function<std::string(const Case&)> fusion_pattern;
  std::function<Work(const Case&)> unfused_work;
  // Config expansion. `config_keys`: top-level keys the op owns (e.g. `bandwidth:`); `expand`: its
  // parameter sets from a config (without it: sweep axes from `defaults`, or one empty set);
  // `variants`: a set's forms per dtype where `like` runs (the peak's kernels), default itself.
  std::vector<std::string> config_keys;
  std::function<std::vector<ParamSet>(const OpConfig&)> expand;
  std::function<std::vector<Params>(const Params&, DType, const Case& like)> variants;
  // The op's spec (inputs, output, check): impls outside this binary (a worker process, a C
  // plugin) get their inputs from it and have their output checked by it. Empty: none of those.
  std::function<std::unique_ptr<OpSpec>()> spec;
  // What a case is worth as a layer of a model: the parameters it holds and the multiply-adds it
  // does, counted the way published model figures count them (weights, biases, norm scales and
  // shifts; MACs of convolutions, matmuls and attention's two products). Empty: neither (an
  // elementwise op, a pooling).
  std::function<ModelCost(const Case&)> model_cost;
  // The op's main work as GEMMs (gemm itself, linear layers, conv2d as an implicit GEMM, ...);
  // nullopt for a case whose parameters give none. Empty: the op is not GEMM-like (elementwise,
  // norms, pooling).
  std::function<std::optional<GemmView>(const Case&)> gemm_view;
  // The small parameter sets `opmeter check` runs every impl of the op on: its edge cases (odd and
  // prime sizes, tails not a multiple of a vector, one element, its widest rows, causal or not, ...),
  // the one `check --quick` runs first. A set may carry optional parameters (a quantization recipe):
  // only impls that run them get it. `variants` applies to each (a GPU's peak kernels). Empty: the
  // op's example alone.
  std::vector<Params> check_shapes;
  // Figures the op derives from a measured result (a collective's bus bandwidth), after the
  // central rates. Empty: none.
  std::function<std::map<std::string, Metric>(const Result&)> derived_metrics;
  // Why a measured result has no rate worth showing (a collective on one rank: no data crosses
  // ranks, the time is the call's overhead): the engine then withholds its rates with this note
  // (withhold_rates). Empty, or an empty note: the work model's rates hold.
  std::function<std::string(const Result&)> no_rate;
  // Cases every rank of a sharded run measures, together (collectives), instead of one rank.
  bool every_rank = false;
};

// The parameter sets `opmeter check` runs op's impls on: its check_shapes, or its example.
std::vector<Params> check_shapes_of(const OpDef& op);

// One impl of an op on a backend.
struct ImplDef {
  std::string op;
  std::string impl;
  // Which impl a pipeline layer runs when its config names none: of the op's impls that run the
  // case here, the highest preference (then the next, should it be skipped). 0: only when named
  // (the fp64 reference, worker impls, users' and tests' impls). The levels below, best first.
  int preference = 0;
  static constexpr int own_kernel = 100;          // opmeter's kernels (CPU and CUDA)
  static constexpr int fused_library = 90;        // oneDNN post-ops, cuBLASLt epilogues
  static constexpr int library = 80;              // OpenBLAS; cuDNN (NCHW)
  static constexpr int library_alternative = 70;  // cuDNN NHWC: when NCHW finds no fused engine
  static constexpr int plain_library = 60;        // cuBLAS
  static constexpr int unfused = 20;              // fusion baselines, for what no fused impl takes
  static constexpr int unfused_last = 10;         // (an activation cuBLASLt's epilogue lacks)
  // The backends whose devices it runs on (Backend::name(): "cpu", "cuda"); an impl that runs in
  // another process or library (the Python worker, a C plugin) may run on several.
  std::vector<std::string> backends = {"cpu"};
  std::string summary;
  std::vector<DType> dtypes;
  // Run-time availability for a case (ISA, library support, size limits).
  std::function<Support(const Case&)> supports = [](const Case&) { return Support::yes(); };
  std::function<std::unique_ptr<Impl>()> make;
  // Measured only where a config or the command line names it (impls that start a worker
  // process): an op's default impls leave it out.
  bool on_request = false;
  // Optional parameters (OpDef::optional_params) it runs: every case it takes carries each of
  // `needs`, and none but those and `accepts`. Cases with others are skipped, and configs do not
  // pair it with them. Default: only cases that carry none (every impl written before them).
  std::vector<std::string> needs, accepts;
  // The C plugin (library path) it comes from; empty for opmeter's own. A plugin's cases run in a
  // child process by default (engine/isolate.cpp): one that exits or crashes must not end the run.
  std::string plugin;

  bool runs_on(const std::string& backend) const;
  std::string backends_text() const;  // "cpu", "cpu|cuda"
};

// Ops and impls register themselves (static registrars in their own files); nothing else
// lists them.
class Registry {
 public:
  static Registry& global();
  void add(OpDef op);
  void add(ImplDef impl);
  void set_spec(const std::string& op, std::function<std::unique_ptr<OpSpec>()> spec);
  const OpDef* op(const std::string& name) const;
  const ImplDef* impl(const std::string& op, const std::string& impl) const;
  std::vector<const ImplDef*> impls_of(const std::string& op) const;
  std::vector<const OpDef*> ops() const;
  std::vector<std::string> impl_names() const;  // every impl name, sorted, unique

 private:
  // Backends that bring their impls (a plugin's) add them on the first lookup, after the static
  // registrars of this binary have run.
  void add_backend_impls() const;
  std::map<std::string, OpDef> ops_;
  mutable std::map<std::pair<std::string, std::string>, ImplDef> impls_;
  mutable std::once_flag backend_impls_;
};

struct OpRegistrar {
  explicit OpRegistrar(OpDef op) { Registry::global().add(std::move(op)); }
};
struct ImplRegistrar {
  explicit ImplRegistrar(ImplDef impl) { Registry::global().add(std::move(impl)); }
};
// Impls made from the registered ops (one per op with a spec: the Python worker's), added at the
// first lookup, when every op of the binary is registered.
void add_late_impls(std::function<std::vector<ImplDef>()> make);
struct LateImplRegistrar {
  explicit LateImplRegistrar(std::function<std::vector<ImplDef>()> make) { add_late_impls(std::move(make)); }
};

// The ceiling kind of an op by name (none for an unknown op).
CeilingKind ceiling_of(const std::string& op);

// Whether an impl runs a case's optional parameters (ImplDef::needs / accepts); the reason names
// the impls that do.
Support takes_optional_params(const ImplDef& impl, const Case& c);

// Puts a case's parameters in its op's order (optional ones after, in theirs): one case, one
// string, however its parameters were written (K=64,M=16,N=32 is gemm's M=16,N=32,K=64).
void put_params_in_op_order(Case& c);

// Checks that a case names a registered op and impl and that the op's parameters are valid (a
// dtype the impl lacks is not an error: the case is `skipped` with that reason). Throws UsageError / CaseError with the reason.
void validate_case(const Case& c);

}  // namespace opmeter
