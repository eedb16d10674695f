#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <stdexcept>
#include <string>

#include "opmeter/case.hpp"

namespace opmeter {

class SampleTimer;

// What one call of an op does: GFLOP/s, GB/s and arithmetic intensity come from this centrally.
struct Work {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double bytes() const { return bytes_read + bytes_written; }
};

// Whether an impl can run a case here; the reason is shown when it cannot (status `skipped`).
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// Which way a number is better, for readers and comparisons.
enum class Better { higher, lower, neither };
// How a metric is shown: a plain number (4 significant digits), a whole number, a percentage
// (the value is already in percent), a duration in seconds, or a size in bytes.
enum class MetricFormat { number, integer, percent, duration, bytes };

// A measurement without a field of its own (a clock, a hit rate, a memory figure), with the hints
// its outputs need: results.jsonl and results.json keep them, the CSV and markdown tables give it
// a column. See result_fields.hpp.
struct Metric {
  double value = 0;
  std::string unit;  // "MHz", "%", "s", "B", ... ; empty for a plain count
  Better better = Better::neither;
  MetricFormat format = MetricFormat::number;
};

// Outcome of a correctness check against the op's higher-precision reference.
struct Check {
  bool ok = false;
  double max_error = 0;  // in the op's error metric (see the op's header)
  double tolerance = 0;
  std::string detail;    // where the worst error is, or what went wrong
  bool unchecked = false;  // nothing to check against (a user kernel of its own op, no reference)
  // What a lossy impl (a quantization recipe) costs, beyond passing its check: e.g. `sqnr_db`,
  // the output's signal-to-quantization-noise ratio against the unquantized fp64 reference.
  std::map<std::string, Metric> metrics;
};

struct SetupOptions {
  std::size_t copies = 1;  // input/output sets to rotate through (cold-cache measurement)
  std::uint64_t seed = 1;
  // Where the op's spec has lookup tables (OpSpec::is_table) and the impl shares them
  // (Impl::shares_tables): copies of the tables that the sets take in turn, set s reading copy
  // s % table_copies. 0: one per set.
  std::size_t table_copies = 0;
};

// One way to compute an op. The engine owns the loop: an impl never times itself.
class Impl {
 public:
  virtual ~Impl() = default;
  // Allocate `copies` input/output sets, fill inputs with random data, create library handles.
  virtual void setup(const Case& c, const SetupOptions& options) = 0;
  // One call of the op on input set `copy` (0 <= copy < copies).
  virtual void run(std::size_t copy) = 0;
  // Waits for asynchronous work issued by run() (devices); the engine calls it before reading
  // the clock.
  virtual void sync() {}
  // Fresh random inputs into set 0, poisoned outputs, run(0), compare with the reference.
  virtual Check verify(std::uint64_t seed) = 0;
  // Facts worth recording with the result (kernel ISA chosen, library algorithm, ...).
  virtual std::map<std::string, std::string> details() const { return {}; }
  // Figures worth recording with the result (bytes of quantized weights, ...), after setup.
  virtual std::map<std::string, Metric> metrics() const { return {}; }
  // A timer of its own, for an impl whose calls run elsewhere (a worker process times its
  // samples there, so the round trip stays out of them); null: its backend's timer.
  virtual std::unique_ptr<SampleTimer> own_timer(const Case& c);
  // Whether run(copy) reads input set `copy` of the `copies` that setup allocated for case `c`.
  // Asked only where a backend's timer could keep samples cold itself but does not (a CUDA case
  // in graph mode, whose launches run back to back): an impl that says no is then timed over the
  // same inputs, and its result says `hot`. On the host every impl rotates (the only way there).
  virtual bool rotates_inputs(const Case&) const { return false; }
  // Whether setup honours SetupOptions::table_copies: sets that share lookup tables and draw
  // their own indices into them. An impl that says no gets whole copies of every input.
  virtual bool shares_tables() const { return false; }
  // Whether the impl's memory is out of opmeter's sight (a worker process's, a C plugin's), so
  // its peak memory is what own_peak_memory says (empty: unknown) rather than the backend's
  // count of opmeter's allocations.
  virtual bool allocates_elsewhere() const { return false; }
  virtual std::optional<std::size_t> own_peak_memory() { return std::nullopt; }
  // Bytes of inputs the timed calls never read, held only to check results (a quantized layer's
  // unquantized weights: its calls read packed copies): left out of the case's peak memory.
  virtual std::size_t check_only_bytes() const { return 0; }
};

}  // namespace opmeter

namespace opmeter {
// Thrown by Impl::setup when the library or hardware cannot do this case after all (e.g. a
// library rejects a dtype combination): the case is `skipped` with this reason.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Thrown by an impl whose calls run in another process (a worker) when that process died, or did
// not answer in time and was killed: the case is `crashed` / `timeout` with this message.
struct ImplCrashed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ImplHung : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace opmeter
