#include "opmeter/engine.hpp"
#include "engine/run_together.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace opmeter {
namespace {
using Clock = std::chrono::steady_clock;
constexpr std::size_t kResizeAfterSamples = 10;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

std::string_view to_string(StopReason r) {
  switch (r) {
    case StopReason::converged: return "converged";
    case StopReason::plateau: return "plateau";
    case StopReason::fixed_count: return "fixed_count";
    case StopReason::timeout: return "timeout";
    case StopReason::cancelled: return "cancelled";
  }
  return "?";
}

std::optional<StopReason> should_stop(std::size_t samples, double precision, double measured_s, double elapsed_s,
                                      const Stopping& s, bool plateau) {
  if (s.fixed_samples > 0) {
    if (samples >= s.fixed_samples) return StopReason::fixed_count;
    return std::nullopt;
  }
  bool enough = samples >= s.min_samples && measured_s >= s.min_time_s;
  if (enough && precision <= s.max_noise) return StopReason::converged;
  if (enough && plateau) return StopReason::plateau;
  if (elapsed_s >= s.timeout_s && samples >= 2) return StopReason::timeout;
  return std::nullopt;
}

bool warmed_up(std::size_t calls, double elapsed_s, const Stopping& s) {
  if (elapsed_s < s.warmup_s) return false;
  // Not the first call alone: it is the one that pays for waking threads (a millisecond or more),
  // so it cannot say a call lasts a sample. Calls as long as kWarmupProbeS are never batched.
  return calls >= kMinWarmupCalls || elapsed_s >= kWarmupProbeS;
}

std::size_t batch_size(double seconds_per_call, double target_sample_s, double timer_overhead_s) {
  double target = std::max(target_sample_s, 100.0 * timer_overhead_s);
  if (!(seconds_per_call > 0)) return 1;
  double n = std::ceil(target / seconds_per_call);
  return static_cast<std::size_t>(std::clamp(n, 1.0, 1e9));
}

double timer_overhead_s() {
  static const double overhead = [] {
    constexpr int kReads = 10000;
    auto t0 = Clock::now();
    Clock::time_point t{};
    for (int i = 0; i < kReads; ++i) t = Clock::now();
    return seconds(t - t0) / kReads;
  }();
  return overhead;
}

std::unique_ptr<SampleTimer> Impl::own_timer(const Case&) { return nullptr; }

std::optional<double> HostTimer::time(std::size_t calls, const std::function<void()>& call) {
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < calls; ++i) call();
  impl_.sync();
  return seconds(Clock::now() - t0);
}

namespace {
std::size_t run_for_impl(Impl& impl, std::size_t batch, double window_s, const std::atomic<bool>* cancel,
                         const std::function<bool()>& enough, SampleTimer* together) {
  batch = std::max<std::size_t>(batch, 1);
  std::size_t calls = 0;
  auto t0 = Clock::now();
  auto stop = [&] {
    bool mine = seconds(Clock::now() - t0) >= window_s || (cancel && cancel->load()) || (enough && enough());
    return together ? together->any(mine) : mine;
  };
  do {
    for (std::size_t i = 0; i < batch; ++i) impl.run(0);
    impl.sync();
    calls += batch;
  } while (!stop());
  return calls;
}
}  // namespace

std::size_t run_for(Impl& impl, std::size_t batch, double window_s, const std::atomic<bool>* cancel,
                    const std::function<bool()>& enough) {
  return run_for_impl(impl, batch, window_s, cancel, enough, nullptr);
}

std::size_t run_for_together(Impl& impl, std::size_t batch, double window_s, SampleTimer& together,
                             const std::atomic<bool>* cancel, const std::function<bool()>& enough) {
  return run_for_impl(impl, batch, window_s, cancel, enough, &together);
}

Measurement sample_for(Impl& impl, SampleTimer& timer, std::size_t batch, double window_s, const std::atomic<bool>* cancel) {
  Measurement m;
  m.batch = std::max<std::size_t>(batch, 1);
  auto call = [&] { impl.run(0); };
  auto start = Clock::now();
  do {
    if (timer.any(cancel && cancel->load())) {
      m.reason = StopReason::cancelled;
      break;
    }
    auto timed = timer.time(m.batch, call);
    if (!timed) {
      ++m.discarded;
      continue;
    }
    m.samples.push_back(*timed / static_cast<double>(m.batch));
    m.measured_s += *timed;
    m.calls += m.batch;
  } while (!timer.any(seconds(Clock::now() - start) >= window_s));
  if (m.reason != StopReason::cancelled) m.reason = StopReason::fixed_count;
  m.elapsed_s = seconds(Clock::now() - start);
  return m;
}

Measurement measure(Impl& impl, std::size_t copies, const Stopping& stopping, const ProgressFn& progress,
                    const std::atomic<bool>* cancel, SampleTimer* timer) {
  HostTimer host_timer(impl);
  if (!timer) timer = &host_timer;
  Measurement m;
  copies = std::max<std::size_t>(copies, 1);
  std::size_t next = 0;
  auto call = [&] {
    impl.run(next);
    if (++next == copies) next = 0;
  };
  auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };

  // Warm-up: a fixed count if asked for, else until warmup_s has passed and several calls ran.
  // It also estimates the cost of a call for batching, from the FASTEST call: a slow one paid
  // for something a batch pays once (waking OpenMP's sleeping threads, a timeslice lost to
  // another process), and sizing by it gives one-call samples that each pay it again.
  auto w0 = Clock::now();
  double per_call = std::numeric_limits<double>::infinity();
  do {
    auto t0 = Clock::now();
    call();
    impl.sync();
    per_call = std::min(per_call, timer->largest(timer->last_call_seconds().value_or(seconds(Clock::now() - t0))));
    ++m.warmup_calls;
  } while (!timer->any(cancelled() || (stopping.warmup_calls > 0
                                           ? m.warmup_calls >= stopping.warmup_calls
                                           : warmed_up(m.warmup_calls, seconds(Clock::now() - w0), stopping))));
  m.batch = stopping.fixed_batch > 0   ? stopping.fixed_batch
            : timer->fixed_batch() > 0 ? timer->fixed_batch()
                                       : batch_size(per_call, stopping.target_sample_s, timer_overhead_s());

  // The batch may be sized again once, after the first samples (below), unless it is fixed.
  bool may_resize = stopping.fixed_batch == 0 && timer->fixed_batch() == 0;
  RunningStats stats;
  m.samples.reserve(stopping.fixed_samples > 0 ? stopping.fixed_samples : 4096);
  auto start = Clock::now();
  auto last_progress = start;
  std::vector<PrecisionCheckpoint> checkpoints;
  for (;;) {
    if (timer->any(cancelled())) {
      m.reason = StopReason::cancelled;
      break;
    }
    auto timed = timer->time(m.batch, call);
    auto t1 = Clock::now();
    double elapsed = seconds(t1 - start);
    // A sample one process of a collective discards, all do: they must go on making the same calls.
    if (timer->any(!timed)) {
      ++m.discarded;
      // While the clock stays throttled, give up at the timeout rather than spin forever.
      if (timer->any(elapsed >= stopping.timeout_s && (m.samples.size() < 2 || stopping.fixed_samples > 0))) {
        m.reason = StopReason::timeout;
        break;
      }
      continue;
    }
    double dt = *timed;
    m.samples.push_back(dt / static_cast<double>(m.batch));
    stats.add(m.samples.back());
    m.measured_s += dt;
    m.calls += m.batch;
    // On a busy machine every warm-up call may have waited for a timeslice: when the first
    // samples show calls far shorter than the batch was sized for, size it again from their
    // fastest and start over (what was sampled counts as warm-up).
    if (may_resize && m.samples.size() == kResizeAfterSamples) {
      may_resize = false;
      const double fastest = *std::min_element(m.samples.begin(), m.samples.end());
      const std::size_t better = batch_size(fastest, stopping.target_sample_s, timer_overhead_s());
      if (better >= 4 * m.batch) {
        m.warmup_calls += m.calls;
        m.batch = better;
        m.samples.clear();
        stats = RunningStats{};
        m.measured_s = 0;
        m.calls = 0;
        start = Clock::now();
        continue;
      }
    }
    // The median's precision takes a partial sort (O(n)), so it is computed each time the count
    // has grown by 5% (O(n) in all), and not before the minimum count and time: nothing can
    // converge then. Each computation is a checkpoint of the plateau test.
    bool may_converge = stopping.fixed_samples == 0 && stats.count() >= stopping.min_samples &&
                        m.measured_s >= stopping.min_time_s;
    bool plateau = false;
    if (may_converge && (checkpoints.empty() || 20 * m.samples.size() >= 21 * checkpoints.back().samples)) {
      checkpoints.push_back({m.samples.size(), median_precision(m.samples)});
      plateau = plateaued(checkpoints);
    }
    double precision = checkpoints.empty() ? std::numeric_limits<double>::infinity() : checkpoints.back().precision;
    auto r = should_stop(stats.count(), precision, m.measured_s, elapsed, stopping, plateau);
    if (timer->any(r.has_value())) {
      // Every process records the same reason: the largest of theirs (one that had none says -1).
      m.reason = static_cast<StopReason>(static_cast<int>(timer->largest(r ? static_cast<double>(*r) : -1.0)));
      break;
    }
    if (progress && seconds(t1 - last_progress) > 0.1) {
      last_progress = t1;
      progress(stats, elapsed);
    }
  }
  m.elapsed_s = seconds(Clock::now() - start);
  return m;
}

}  // namespace opmeter
