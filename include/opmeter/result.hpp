#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/case.hpp"
#include "opmeter/op.hpp"
#include "opmeter/stats.hpp"

namespace opmeter {

enum class Status { ok, skipped, failed, error, crashed, timeout };
std::string_view to_string(Status s);
std::optional<Status> parse_status(std::string_view s);

// A GPU case's second figure: the same calls at the device's steady state (after running until
// its power settled), timed in the energy window. The result's own median is the burst figure.
struct Sustained {
  std::vector<double> samples;  // seconds per call
  Summary summary;
  double gflops = 0, gbps = 0;  // at the sustained median
};

// The key merged results carry in Result::details: the name of the machine (the run) that
// measured them (opmeter merge).
inline constexpr const char* kMachineDetail = "machine";

// Everything measured about one case. Engine output; reporters only format it.
struct Result {
  Case kase;
  std::string case_string;
  Status status = Status::ok;
  std::string reason;                 // why skipped / failed / error / crashed / timeout
  std::vector<std::string> flags;     // unconverged, plateau, faster-than-peak, faster-than-bandwidth,
                                      // above-roofline, contended, throttled, power-capped
  std::string timestamp;              // ISO 8601 UTC, when the case finished

  std::vector<double> samples;        // seconds per call, raw
  Summary summary;                    // of samples
  std::size_t batch = 0, calls = 0, warmup_calls = 0, copies = 0;
  double measured_s = 0, elapsed_s = 0;
  std::string stop_reason;            // converged | plateau | timeout | fixed_count (see StopReason)
  std::string cache = "cold";         // cold | hot | none (no memory inputs)

  Work work;
  double gflops = 0, gbps = 0, intensity = 0;  // at the median time
  std::optional<double> peak_gflops;  // measured ceiling this result is compared with
  std::optional<double> pct_peak;
  // Roofline from measured ceilings: bound = min(peak, intensity x bandwidth); efficiency =
  // achieved / bound. pct_bandwidth = GB/s as % of the measured memory bandwidth.
  std::optional<double> bandwidth_gbps, roofline_gflops, efficiency, pct_bandwidth;
  std::optional<double> max_error, tolerance;
  // Energy over the timed window, where the device reports it: average power and joules per call.
  // Measured in a window of back-to-back calls after timing (see run_case).
  std::optional<double> avg_power_w, energy_j;
  std::string energy_reason;          // why the energy fields are empty on a device that has them
  std::size_t throttled_samples = 0;  // samples discarded: the GPU slowed down (heat, hardware)
  std::optional<Sustained> sustained;
  nlohmann::json telemetry;           // GPU timeline (see telemetry_json); null where none
  // Allocation high-water mark of the case on its device (Backend::memory_peak); empty: unknown.
  std::optional<std::size_t> peak_memory_bytes;
  std::map<std::string, std::string> details;  // details[kMachineDetail]: see there
  std::map<std::string, Metric> metrics;  // by name; set them with set_metric

  bool has_flag(const std::string& f) const;
  void add_flag(const std::string& f);
  // Adds or replaces a metric. std::invalid_argument for a name that is not letters, digits, '_',
  // '.', '-', or that a result field or Google Benchmark's entry already uses.
  void set_metric(const std::string& name, Metric m);
};

// Now, as ISO 8601 UTC (`2026-11-22T10:00:00Z`): result and context timestamps.
std::string utc_now_iso();
// A result that carries only a status and its reason (a case that was never measured).
Result unmeasured_result(const Case& c, Status status, std::string reason);

// Fills gflops / gbps / intensity from work and the median (no-op without samples), and the
// sustained rates from the sustained median.
void derive_rates(Result& r);

// A result whose work did not happen as its op declares it (a collective on one rank: no data
// crosses ranks) keeps its time but no rate: withhold_rates clears its work, so no GB/s, GFLOP/s,
// per-watt or % of peak is derived, flags it kNoRateFlag and keeps `note` as the flag's detail,
// which every output shows (rate_note).
inline constexpr const char* kNoRateFlag = "no-rate";
void withhold_rates(Result& r, const std::string& note);
std::string rate_note(const Result& r);  // the note of a no-rate result; empty otherwise
// Compares a result with a compute ceiling; flags `faster-than-peak` above `margin_pct` (105%: a
// measured peak has noise of its own; 100% for a datasheet rate, a hard limit), with
// details["faster-than-peak"] naming the ceiling and `from` (the case, profile or datasheet).
void apply_peak(Result& r, double peak_gflops, const std::string& from = "", double margin_pct = 105.0);
// Compares a result with the measured memory bandwidth and, when a compute peak is known, places
// it under the roofline. Above 105% of either: `faster-than-bandwidth` / `above-roofline`, each
// with a detail of its name saying which ceiling, measured by `from`.
void apply_roofline(Result& r, double bandwidth_gbps, const std::string& from = "");

nlohmann::json params_json(const Case& c);  // {"M": "1024", ...}
nlohmann::json to_json(const Result& r);
nlohmann::json sustained_json(const Sustained& s);
Result result_from_json(const nlohmann::json& j);  // throws UsageError on a malformed record
// One `run_type: iteration` entry of results.json (Google Benchmark's format, opmeter's keys).
Result result_from_gbench(const nlohmann::json& entry);

// Whether a case is read as compute (GFLOP/s) rather than memory traffic (GB/s): it moves no
// bytes, or does at least kComputeBoundIntensity FLOP per byte (below the ridge of any machine
// opmeter targets, so GEMM-like ops land here and elementwise ops, norms and losses do not).
inline constexpr double kComputeBoundIntensity = 4.0;
bool is_compute_bound(const Result& r);

// The sustained figure in the unit the result is read in: GFLOP/s when compute-bound, else GB/s;
// empty without one.
struct Rate {
  double value;
  const char* unit;  // "GFLOP/s" or "GB/s"
};
std::optional<Rate> sustained_rate(const Result& r);

// Work per watt at the median: GFLOP/s per W for compute-bound cases, GB/s per W otherwise;
// empty without a power reading.
struct PerWatt {
  double value;
  const char* unit;  // "GFLOP/s/W" or "GB/s/W"
};
std::optional<PerWatt> per_watt(const Result& r);

}  // namespace opmeter
