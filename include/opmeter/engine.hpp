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

// When to stop sampling: when the median is known precisely enough (nvbench's counts and times,
// but the target is the precision of the estimate, not the spread of the samples).
struct Stopping {
  double max_noise = 0.005;      // target precision: relative half-width of the median's 95% CI
  std::size_t min_samples = 10;
  double min_time_s = 0.5;       // of measured (timed) time
  double timeout_s = 15;         // wall time of sampling; then reported `unconverged`
  std::size_t fixed_samples = 0;  // > 0: exactly this many samples, no precision target
  std::size_t warmup_calls = 0;  // > 0: exactly this many warm-up calls, else warmup_s
  double warmup_s = 0.05;
  double target_sample_s = 1e-3; // short calls are batched up to this much time per sample
  std::size_t fixed_batch = 0;   // > 0: exactly this many calls per sample (harness benchmarks)
};

// converged: precision reached; plateau: precision stopped improving before it (see plateaued());
// timeout: neither within timeout_s (the result is flagged `unconverged`).
enum class StopReason { converged, plateau, fixed_count, timeout, cancelled };
std::string_view to_string(StopReason r);

// Pure stopping rule, applied after each sample: `precision` is the median's relative CI
// half-width so far (Summary::precision); `plateau` whether it stopped improving.
std::optional<StopReason> should_stop(std::size_t samples, double precision, double measured_s, double elapsed_s,
                                      const Stopping& s, bool plateau = false);

// Whether a time-based warm-up is over: warmup_s has passed and at least kMinWarmupCalls calls
// ran (their fastest sizes the batch), or kWarmupProbeS has (calls that long are not batched).
inline constexpr std::size_t kMinWarmupCalls = 5;
inline constexpr double kWarmupProbeS = 0.5;
bool warmed_up(std::size_t calls, double elapsed_s, const Stopping& s);

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
  // Seconds the last warm-up call took where it ran, when the host's clock around it says more
  // (a worker's pipe round trip); the engine sizes batches by it.
  virtual std::optional<double> last_call_seconds() const { return std::nullopt; }
  // Facts about the timing worth keeping with the result (launch overhead, clock checks).
  virtual std::map<std::string, std::string> details() const { return {}; }
  // A timer whose calls involve other processes (an MPI collective: every rank must make the same
  // calls) takes each decision of the loop with them: whether any says yes, the largest value.
  // Alone, the process's own.
  virtual bool any(bool yes) { return yes; }
  virtual double largest(double value) { return value; }
  // The samples that follow run under a profiler that serializes launches and handles caches
  // itself (run --profile): a device timer then enqueues nothing of its own around the calls
  // (no hold kernel, no L2 flush), so the profiler captures the calls alone.
  virtual void under_profiler() {}
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
  std::size_t discarded = 0;    // samples the timer rejected (taken while the GPU slowed itself down)
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
// short), or until `enough` (checked after each batch) says so. Returns the calls made.
std::size_t run_for(Impl& impl, std::size_t batch, double seconds, const std::atomic<bool>* cancel = nullptr,
                    const std::function<bool()>& enough = {});

// Samples of `batch` calls each, back to back through `timer`, for `seconds`: the sustained
// figure, taken while the device runs at its steady state. Discarded samples are counted in m.
Measurement sample_for(Impl& impl, SampleTimer& timer, std::size_t batch, double seconds,
                       const std::atomic<bool>* cancel = nullptr);

}  // namespace opmeter
