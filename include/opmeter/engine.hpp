#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "opmeter/op.hpp"
#include "opmeter/stats.hpp"

namespace opmeter {

// When to stop sampling. Default: nvbench's criterion.
struct Stopping {
  double max_noise = 0.005;      // stdev / mean target (fraction)
  std::size_t min_samples = 10;
  double min_time_s = 0.5;       // of measured (timed) time
  double timeout_s = 15;         // wall time of sampling; then reported `unconverged`
  std::size_t fixed_samples = 0; // > 0: exactly this many samples, no noise criterion
  std::size_t warmup_calls = 0;  // > 0: exactly this many warm-up calls, else warmup_s
  double warmup_s = 0.05;
  double target_sample_s = 1e-3; // short calls are batched up to this much time per sample
  std::size_t fixed_batch = 0;   // > 0: exactly this many calls per sample (harness benchmarks)
};

enum class StopReason { converged, fixed_count, timeout, cancelled };
std::string_view to_string(StopReason r);

// Pure stopping rule, applied after each sample: `noise` is the relative noise of the samples so
// far (see Summary::rel_noise).
std::optional<StopReason> should_stop(std::size_t samples, double noise, double measured_s, double elapsed_s,
                                      const Stopping& s);

// Calls per sample so a sample lasts at least the target and the timer's overhead stays below
// 1% of it.
std::size_t batch_size(double seconds_per_call, double target_sample_s, double timer_overhead_s);

// Times one sample where the work runs. The host's timer reads steady_clock around the calls and
// Impl::sync(); a device's timer uses its own events and may discard a sample (clock throttled).
class SampleTimer {
 public:
  virtual ~SampleTimer() = default;
  // Seconds that `calls` calls of `call` took, or nullopt when the sample must be discarded.
  virtual std::optional<double> time(std::size_t calls, const std::function<void()>& call) = 0;
  // Calls per sample the timer needs (a CUDA graph's launches; 1 for cold device samples);
  // 0 lets the engine batch short calls.
  virtual std::size_t fixed_batch() const { return 0; }
  // Facts about the timing worth keeping with the result (launch overhead, clock checks).
  virtual std::map<std::string, std::string> details() const { return {}; }
};

class HostTimer : public SampleTimer {
 public:
  explicit HostTimer(Impl& impl) : impl_(impl) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override;

 private:
  Impl& impl_;
};

struct Measurement {
  std::vector<double> samples;  // seconds per call, one per sample
  std::size_t batch = 1;        // calls per sample
  std::size_t calls = 0;        // timed calls
  std::size_t warmup_calls = 0;
  double measured_s = 0;        // sum of timed sample durations
  double elapsed_s = 0;         // wall time of the sampling loop
  std::size_t discarded = 0;    // samples the timer rejected (taken while the clock was throttled)
  StopReason reason = StopReason::converged;
};

// Called at most every ~0.1 s while sampling: running stats and elapsed seconds.
using ProgressFn = std::function<void(const RunningStats&, double elapsed_s)>;

// Estimated cost of one steady_clock read (measured once per process).
double timer_overhead_s();

// Warm-up, batching, sampling until the stopping rule holds. Calls rotate over `copies` input
// sets so consecutive calls read different memory (cold cache) unless copies == 1. Samples are
// timed by `timer` (default: the host's clock).
Measurement measure(Impl& impl, std::size_t copies, const Stopping& stopping,
                    const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr,
                    SampleTimer* timer = nullptr);

// Back-to-back calls for at least `seconds` (synchronizing every `batch` calls so queues stay
// short): the window an energy reading is taken over. Returns the calls made.
std::size_t run_for(Impl& impl, std::size_t batch, double seconds, const std::atomic<bool>* cancel = nullptr);

// Whether a sample counts: taken at no less than `min_fraction` of the default clock. An unknown
// clock (<= 0) counts.
inline constexpr double kMinClockFraction = 0.75;
bool clock_ok(double measured_mhz, double default_mhz, double min_fraction = kMinClockFraction);

}  // namespace opmeter
