#include "engine/runner.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <cmath>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "engine/ceiling_rate.hpp"
#include "engine/contention.hpp"
#include "engine/element_types.hpp"
#include "engine/op_figures.hpp"
#include "engine/profile_pass.hpp"
#include "engine/profiled_timer.hpp"
#include "engine/rank_energy.hpp"
#include "engine/rank_gate.hpp"
#include "engine/run_together.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/buffer.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/sensor.hpp"
#include "sensors/telemetry.hpp"
#include "util/interrupt.hpp"

namespace opmeter {
namespace {
constexpr double kMemoryHeadroom = 0.8;  // of available memory a case may take

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / double(1u << 30)); }
}  // namespace

std::size_t copies_to_exceed(double bytes_per_copy, std::size_t cache_bytes) {
  if (!(bytes_per_copy > 0)) return 1;
  return static_cast<std::size_t>(std::max(1.0, std::ceil(2.0 * static_cast<double>(cache_bytes) / bytes_per_copy)));
}

std::size_t replay_copies(std::size_t wanted, std::size_t calls_per_replay, double footprint, double budget) {
  for (std::size_t d = std::max<std::size_t>(wanted, 1); d <= calls_per_replay; ++d)
    if (calls_per_replay % d == 0) return static_cast<double>(d) * footprint <= budget ? d : 0;
  return 0;
}

ColdWay cold_way(bool timer_makes_cold, bool impl_rotates, std::size_t copies_needed) {
  if (timer_makes_cold) return ColdWay::timer;
  return impl_rotates || copies_needed <= 1 ? ColdWay::rotate : ColdWay::none;
}

std::size_t table_copies(std::size_t sets, double set_bytes, double table_bytes, std::size_t cache_bytes,
                         double budget) {
  if (!(table_bytes > 0)) return sets;
  const double want = std::ceil(2.0 * double(cache_bytes) / table_bytes);
  const double afford = std::floor((budget - double(sets) * set_bytes) / table_bytes);
  return static_cast<std::size_t>(std::clamp(std::min(want, afford), 1.0, double(std::max<std::size_t>(sets, 1))));
}

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

// Sets that share copies of their tables: what part of the rows they gather may still be cached.
std::string shared_tables_note(const ColdFacts& f, std::size_t sets, std::size_t tables) {
  const double held = double(tables) * f.table_bytes;
  return fmt::format(
      "cold over {} input sets sharing {} cop{} of the {:.3g} MiB of tables (too large to copy for each set): "
      "their rows are gathered at random, up to {:.0f}% of them from the {:.3g} MiB cache",
      sets, tables, tables == 1 ? "y" : "ies", f.table_bytes / kMiB,
      std::min(100.0, 100.0 * double(f.cache_bytes) / held), double(f.cache_bytes) / kMiB);
}

// A host case of an op with tables: sets enough that what the calls in turn read and write
// exceeds twice the cache (a call reads only rows of the tables), each set with its own indices;
// whole copies where memory allows, else sets that share as many table copies as it does.
ColdPlan plan_cold_with_tables(const ColdFacts& f) {
  const double set_bytes = std::max(0.0, f.footprint - f.table_bytes), touched = f.bytes_read + f.bytes_written;
  const std::size_t want = std::min(copies_to_exceed(touched, f.cache_bytes), kMaxColdCopies);
  const double affordable = set_bytes > 0 ? std::floor(f.budget / set_bytes) : double(want);
  const std::size_t sets = std::clamp<std::size_t>(std::min<double>(double(want), affordable), 1, want);
  if (sets == 1 && touched >= 2.0 * double(f.cache_bytes)) return {ColdWay::rotate, 1, 0, "", ""};
  ColdPlan p{ColdWay::rotate, sets, 0, "", ""};
  if (double(sets) * f.footprint > f.budget) {
    p.table_copies = table_copies(sets, set_bytes, f.table_bytes, f.cache_bytes, f.budget);
    p.partly_cached = shared_tables_note(f, sets, p.table_copies);
  } else if (double(sets) * touched < 2.0 * double(f.cache_bytes)) {
    p.partly_cached = fmt::format(
        "cold over {} input sets whose calls touch {:.3g} MiB each ({:.3g} MiB in all, as many as {}): less than "
        "twice the {:.3g} MiB cache, so part of each call's reads may come from it",
        sets, touched / kMiB, double(sets) * touched / kMiB,
        sets == kMaxColdCopies ? "opmeter rotates" : "memory allows", double(f.cache_bytes) / kMiB);
  }
  return p;
}
}  // namespace

ColdPlan plan_cold(const ColdFacts& f) {
  // Samples that replay the same calls read copies of the inputs and share the output: the copies
  // must hold twice the cache in what a call reads, uncapped.
  const std::size_t needed = f.calls_per_replay ? copies_to_exceed(f.bytes_read, f.cache_bytes)
                                                : cold_copies(f.footprint, f.cache_bytes, f.budget);
  const bool timer_flushes = f.timer_makes_cold && !f.calls_per_replay;
  switch (cold_way(timer_flushes, f.impl_rotates, needed)) {
    case ColdWay::timer: return {ColdWay::timer, 1, 0, ""};
    case ColdWay::none:
      return {ColdWay::none, 1, 0,
              "back-to-back launches over the same inputs (this impl does not rotate input copies)"};
    case ColdWay::rotate: break;
  }
  if (!f.calls_per_replay && f.table_bytes > 0) return plan_cold_with_tables(f);
  if (!f.calls_per_replay) {
    ColdPlan p{ColdWay::rotate, needed, 0, "", ""};
    const double held = double(needed) * f.footprint;
    const double touched = double(needed) * (f.bytes_read + f.bytes_written);
    if (f.tables_not_shared && touched < 2.0 * double(f.cache_bytes))
      p.partly_cached = fmt::format(
          "cold over {} (this impl copies the tables whole, with the same indices in every set): its calls gather "
          "the same rows, {:.3g} MiB in all, less than twice the {:.3g} MiB cache, so part of each call's reads may "
          "come from it",
          needed == 1 ? "one input set" : fmt::format("{} copies of one input set", needed), touched / kMiB,
          double(f.cache_bytes) / kMiB);
    else if (f.footprint > 0 && held < 2.0 * double(f.cache_bytes))
      p.partly_cached = fmt::format(
          "cold over {} input sets of {:.3g} MiB ({:.3g} MiB in all, as many as {}): less than twice the {:.3g} MiB "
          "cache, so part of each call's reads may come from it",
          needed, f.footprint / kMiB, held / kMiB, needed == kMaxColdCopies ? "opmeter rotates" : "memory allows",
          double(f.cache_bytes) / kMiB);
    return p;
  }
  if (needed <= 1) return {ColdWay::rotate, needed, 0, "", ""};
  if (const std::size_t fit = replay_copies(needed, *f.calls_per_replay, f.footprint, f.budget))
    return {ColdWay::rotate, fit, 0, "", ""};
  // Tables too large to copy for each set: sets of their own indices sharing what memory allows.
  const double set_bytes = f.footprint - f.table_bytes;
  if (f.table_bytes > 0)
    if (const std::size_t fit = replay_copies(needed, *f.calls_per_replay, set_bytes, f.budget)) {
      const std::size_t tables = table_copies(fit, set_bytes, f.table_bytes, f.cache_bytes, f.budget);
      return {ColdWay::rotate, fit, tables, "", shared_tables_note(f, fit, tables)};
    }
  return {
      ColdWay::none, 1, 0,
      fmt::format("the {} copies whose reads would exceed twice the cache do not divide into the {} calls each sample "
                  "replays, within memory (a graph of a multiple of {} launches would)",
                  needed, *f.calls_per_replay, needed)};
}

std::size_t cold_copies(double footprint, std::size_t llc_bytes, double budget) {
  if (!(footprint > 0)) return 1;
  double want = std::ceil(2.0 * static_cast<double>(llc_bytes) / footprint);
  double affordable = std::floor(budget / footprint);
  return static_cast<std::size_t>(std::clamp(std::min(want, affordable), 1.0, double(kMaxColdCopies)));
}

namespace {

// A profiler range named by the case string (NVTX on a GPU), so timelines show which case ran when.
struct ProfilerRange {
  ProfilerRange(Backend& b, const std::string& name) : backend(b) { backend.range_push(name); }
  ~ProfilerRange() { backend.range_pop(); }
  Backend& backend;
};

// run --profile, after the measurement: one more sample of one call inside the profiler's capture
// range (nsys, ncu --profile-from-start off), untimed. One that fails is a detail, never the status;
// but where every rank makes the same calls (a collective), a rank that went on alone would pair
// its next calls with the others' sample: the error is the case's, on every rank (RankGate).
void profiled_sample(Result& r, Impl& impl, SampleTimer& timer, Backend& backend, bool every_rank) {
  try {
    ProfiledTimer(timer, backend).time(1, [&] { impl.run(0); });
    r.details["profiled"] = "one more sample of one call after the measurement, in the profiler's capture range; not in the results";
  } catch (const std::exception& e) {
    if (every_rank) throw;
    r.details["profiled"] = fmt::format("not taken: {}", e.what());
  }
}

// The impl's own timer (a worker's) or else its backend's.
std::unique_ptr<SampleTimer> timer_for(Backend& backend, Impl& impl, const Case& c) {
  auto own = impl.own_timer(c);
  return own ? std::move(own) : backend.timer(impl, c);
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// When each device last ran timed work: the cool-down before a burst counts the idle time since
// (the previous case's check and this case's setup), and sleeps only for the rest.
std::map<std::string, double>& busy_until() {
  static std::map<std::string, double> busy;
  return busy;
}

void cool_down(const std::string& device, double seconds) {
  auto it = busy_until().find(device);
  double idle = it == busy_until().end() ? seconds : now_s() - it->second;
  if (idle < seconds) std::this_thread::sleep_for(std::chrono::duration<double>(seconds - idle));
}

// The sustained figure and the energy per call: calls run back to back until the device's power
// settles (at most heat_max_s), then hot samples of >= 10 ms each are timed for
// energy_window_s while the telemetry's energy counter runs.
void measure_sustained(Result& r, Impl& impl, const Case& c, Backend& backend, Telemetry* telemetry,
                       const RunOptions& options, const std::atomic<bool>* cancel) {
  auto batch = static_cast<std::size_t>(std::max(static_cast<double>(r.batch), std::ceil(0.01 / r.summary.median)));
  double heat_start = now_s();
  // Without telemetry nothing says when power settled: heat for a fixed second.
  double heat_s = telemetry ? options.heat_max_s : std::min(1.0, options.heat_max_s);
  Case hot = c;  // the window's samples are back to back: no L2 flush, no launch batching
  hot.hot = true;
  drop_launch_batching(hot);
  auto device_timer = timer_for(backend, impl, hot);
  // Heating ends together on every rank of a collective (the timer's any()): each makes the same calls.
  run_for_together(impl, batch, heat_s, *device_timer, cancel,
                   [&] { return telemetry && power_steady(telemetry->snapshot()); });
  r.details["sustained_heat_s"] = fmt::format("{:.2f}", now_s() - heat_start);

  SampleTimer* timer = device_timer.get();
  std::optional<TelemetryTimer> watched;
  if (telemetry) timer = &watched.emplace(*timer, *telemetry);

  const double window_from = now_s();
  Measurement m = sample_for(impl, *timer, batch, options.energy_window_s, cancel);
  const double window_to = now_s();
  std::size_t calls = m.calls + m.discarded * m.batch;
  // Energy from the poller that already watches the case (no second one on the GPU's driver).
  std::string why;
  if (auto it = r.details.find("telemetry"); it != r.details.end()) why = it->second;  // why there is no poller
  std::optional<EnergyReading> reading;
  if (telemetry) reading = window_energy(telemetry->snapshot(), window_from, window_to, why);
  if (!m.samples.empty()) {
    Sustained s;
    s.samples = std::move(m.samples);
    s.summary = summarize(s.samples);
    r.sustained = std::move(s);
  }
  r.details["sustained_window"] = fmt::format("{:.2f} s, {} calls in samples of {}", m.elapsed_s, calls, m.batch);
  if (watched && watched->power_capped_samples() > 0) {
    r.details["sustained_power_capped_samples"] = std::to_string(watched->power_capped_samples());
    r.add_flag("power-capped");
  }
  if (watched && watched->slowed_samples() > 0)
    r.details["sustained_slowed_samples"] = std::to_string(watched->slowed_samples());
  if (!reading || calls == 0) {
    r.energy_reason = why;
    return;
  }
  r.energy_j = reading->joules / static_cast<double>(calls);
  r.avg_power_w = reading->avg_watts();
  r.details["energy_method"] = reading->method;
  r.details["energy_window"] = fmt::format("{:.2f} s, {} calls", reading->seconds, calls);
}

// Energy per call where the backend has energy counters but no burst/sustained protocol (the
// CPU's RAPL): hot samples of >= 10 ms each, back to back for energy_window_s, with the counters
// read before and after. Without counters the result says why, and no time is spent.
void measure_window_energy(Result& r, Impl& impl, const Case& c, Backend& backend, const RunOptions& options,
                           const std::atomic<bool>* cancel) {
  std::string why;
  std::unique_ptr<EnergyCounter> counter = backend.energy_counter(c, why);
  Case hot = c;  // back to back, as the calls of a layer in a model run
  hot.hot = true;
  auto timer = timer_for(backend, impl, hot);
  // The ranks of a collective run the window together, or none does (one without a counter).
  if (timer->any(!counter)) {
    r.energy_reason = counter ? "another rank of the launch has no energy counter" : why;
    return;
  }
  double per_call = r.summary.median > 0 ? r.summary.median : 0.01;
  auto batch = static_cast<std::size_t>(std::max(static_cast<double>(r.batch), std::ceil(0.01 / per_call)));
  counter->start();
  Measurement m = sample_for(impl, *timer, batch, options.energy_window_s, cancel);
  auto energy = counter->stop(why);
  std::size_t calls = m.calls + m.discarded * m.batch;
  if (m.reason == StopReason::cancelled) why = kInterruptedReason;
  if (!energy || calls == 0 || m.reason == StopReason::cancelled) {
    r.energy_reason = why;
    return;
  }
  const double n = static_cast<double>(calls);
  r.energy_j = energy->total_j() / n;
  r.avg_power_w = energy->avg_watts();
  for (auto& [domain, joules] : energy->joules)
    r.set_metric("energy_" + domain + "_j", {.value = joules / n, .unit = "J", .better = Better::lower});
  r.details["energy_method"] = energy->method;
  r.details["energy_window"] = fmt::format("{:.2f} s, {} calls in samples of {}", energy->seconds, calls, m.batch);
}

// The readings taken in [from, to); when none was (a window shorter than the poll period), the
// last one before `to`: the state in force then.
std::vector<TelemetryPoint> between(const std::vector<TelemetryPoint>& points, double from, double to) {
  std::vector<TelemetryPoint> out;
  const TelemetryPoint* before = nullptr;
  for (auto& p : points) {
    if (p.t_s >= from && p.t_s < to) out.push_back(p);
    if (p.t_s < to) before = &p;
  }
  if (out.empty() && before) out.push_back(*before);
  return out;
}

// What the GPU did during the case: the whole timeline (cool-down included), and in details its
// clock, power and temperature while the burst samples were taken (from `burst_from` to
// `burst_to`) and, when there was one, during heating and the sustained window (after
// `burst_to`); `power-capped` when burst samples ran at the software power cap.
void record_telemetry(Result& r, const std::vector<TelemetryPoint>& points, double t0, double burst_from, double burst_to,
                      const TelemetryTimer* burst) {
  if (points.empty()) return;
  r.telemetry = telemetry_json(points, t0);
  auto s = summarize_telemetry(between(points, burst_from, burst_to));
  if (s.sm_mhz_median > 0) {
    r.details["sm_clock_median_mhz"] = fmt::format("{:.0f}", s.sm_mhz_median);
    r.details["sm_clock_min_mhz"] = fmt::format("{:.0f}", s.sm_mhz_min);
  }
  if (s.power_w_median > 0) r.details["power_median_w"] = fmt::format("{:.1f}", s.power_w_median);
  auto all = summarize_telemetry(points);
  if (all.temp_c_max > 0) r.details["temp_max_c"] = fmt::format("{:.0f}", all.temp_c_max);
  r.details["clock_event_reasons"] = clock_event_names(all.reasons_seen);
  if (all.capped_sm_mhz_median > 0) r.details["power_capped_sm_clock_mhz"] = fmt::format("{:.0f}", all.capped_sm_mhz_median);
  if (auto after = summarize_telemetry(between(points, burst_to, 1e300)); after.sm_mhz_median > 0 && r.sustained) {
    r.details["sustained_sm_clock_median_mhz"] = fmt::format("{:.0f}", after.sm_mhz_median);
    r.details["sustained_power_median_w"] = fmt::format("{:.1f}", after.power_w_median);
  }
  if (burst && burst->power_capped_samples() > 0) {
    r.details["power_capped_samples"] = std::to_string(burst->power_capped_samples());
    r.add_flag("power-capped");
  }
  if (burst && burst->slowed_samples() > 0)
    r.details["slowdown_reasons"] = clock_event_names(burst->slowdown_reasons());
}

Result finished(Result& r, Status s, std::string reason) {
  r.status = s;
  r.reason = std::move(reason);
  r.timestamp = utc_now_iso();
  return r;
}

// Runs a case's procedure on a fresh result; whatever it throws becomes the result's status, so a
// failing case never takes the run down and the next case starts afresh.
Result guarded(const Case& c, const std::function<Result(Result&)>& procedure) {
  Result r;
  r.kase = c;
  r.case_string = c.to_string();
  try {
    return procedure(r);
  } catch (const Unsupported& e) {
    return finished(r, Status::skipped, e.what());
  } catch (const ImplCrashed& e) {
    return finished(r, Status::crashed, e.what());
  } catch (const ImplHung& e) {
    return finished(r, Status::timeout, e.what());
  } catch (const Interrupted&) {  // a wait (on the worker) noticed Ctrl-C: cut short, not a result
    return finished(r, Status::error, kInterruptedReason);
  } catch (const std::bad_alloc&) {
    return finished(r, Status::error, "out of memory while setting up the case");
  } catch (const std::exception& e) {
    return finished(r, Status::error, e.what());
  }
}

// Whether a case can run here, before anything is set up: a valid case of a registered op and
// impl (else it throws), a ready backend, a dtype the impl has, and support by the backend, the
// impl and its optional parameters. The reason when not: the case is `skipped`.
Support runnable_here(const Case& c) {
  validate_case(c);
  Backend& backend = backend_of(c);
  if (auto s = backend.ready(); !s.ok) return s;
  const ImplDef& impl_def = *Registry::global().impl(c.op, c.impl);
  if (std::find(impl_def.dtypes.begin(), impl_def.dtypes.end(), c.dtype) == impl_def.dtypes.end())
    return Support::no(fmt::format("{} has no {} {}", c.impl, to_string(c.dtype), c.op));
  if (auto s = backend.supports(c); !s.ok) return s;
  if (auto s = takes_optional_params(impl_def, c); !s.ok) return s;
  return impl_def.supports(c);
}

// Whether a case of `footprint` bytes fits in `available` bytes of its device's free memory.
Support fits_in_memory(const Case& c, double footprint, double available) {
  if (footprint > kMemoryHeadroom * available)
    return Support::no(fmt::format("needs {} of memory, {} available on {}", gib(footprint), gib(available),
                                   c.on_host() ? "the host" : c.device));
  return Support::yes();
}

// Bytes of the case's lookup tables (OpSpec::is_table), 0 when it has none.
double table_bytes(const OpDef& op, const Case& c) {
  if (!op.spec) return 0;
  auto spec = op.spec();
  spec->bind(c);
  return spec->table_bytes();
}

}  // namespace

bool cut_by_interrupt(const Result& r, const std::atomic<bool>* cancel) {
  return cancel && cancel->load() && r.status == Status::error && r.reason == kInterruptedReason;
}

Result run_case(const Case& c, const RunOptions& options, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  RankGate gate(c);  // an every-rank case (a collective) starts on all ranks or on none
  return gate.settle(guarded(c, [&](Result& r) {
    auto finish = [&](Status s, std::string reason) { return finished(r, s, std::move(reason)); };
    if (auto s = runnable_here(c); !s.ok) return finish(Status::skipped, s.reason);
    Backend& backend = backend_of(c);
    const OpDef& op = *Registry::global().op(c.op);
    const ImplDef& impl_def = *Registry::global().impl(c.op, c.impl);

    r.work = op.work(c);
    const double footprint = op.footprint(c), available = backend.free_memory(c);
    if (auto s = fits_in_memory(c, footprint, available); !s.ok) return finish(Status::skipped, s.reason);
    r.cache = !op.uses_memory ? "none" : c.hot ? "hot" : "cold";

    if (auto no = gate.ready()) return finish(no->status, no->reason);
    ProfilerRange range(backend, r.case_string);
    omp_set_num_threads(c.threads);
    backend.mark_memory(c);
    auto impl = backend.make(impl_def, c);
    // Cold samples: the backend's timer flushes caches before each (a GPU's L2), or the runner
    // rotates input copies that together exceed the cache; an impl that cannot rotate is hot.
    ColdPlan cold;
    const double tables = r.cache == "cold" ? table_bytes(op, c) : 0;
    if (r.cache == "cold")
      cold = plan_cold({.timer_makes_cold = backend.timer_makes_cold(),
                        .impl_rotates = backend.rotates_inputs(*impl, c),
                        .calls_per_replay = backend.calls_per_replay(c),
                        .footprint = footprint,
                        .bytes_read = r.work.bytes_read,
                        .budget = std::min(0.25 * available, 4.0 * (1u << 30)),
                        .cache_bytes = backend.cache_bytes(c).value_or(llc_bytes()),
                        .table_bytes = impl->shares_tables() ? tables : 0,
                        .bytes_written = r.work.bytes_written,
                        .tables_not_shared = tables > 0 && !impl->shares_tables()});
    if (cold.way == ColdWay::none) r.cache = "hot";
    r.copies = cold.copies;
    impl->setup(c, {.copies = r.copies, .seed = options.seed, .table_copies = cold.table_copies});
    if (auto no = gate.ready()) return finish(no->status, no->reason);
    r.details = impl->details();
    if (cold.way == ColdWay::none) r.details["cache"] = "hot: " + cold.hot_because;
    if (!cold.partly_cached.empty()) {
      r.details["cache"] = cold.partly_cached;
      r.add_flag("partly-cached");  // a cold time that may be partly warm: tables that compare say so
    }
    if (auto types = element_types(c); !types.empty()) r.details["types"] = types;

    auto check = impl->verify(options.seed + 1);
    r.max_error = check.max_error;
    r.tolerance = check.tolerance;
    if (!check.ok) return finish(Status::failed, "wrong result before timing: " + check.detail);
    if (check.unchecked) r.add_flag("unchecked");
    for (auto& [name, metric] : impl->metrics()) r.set_metric(name, metric);
    for (auto& [name, metric] : check.metrics) r.set_metric(name, metric);

    // A device with telemetry is watched through the case: samples it slowed down by heat or
    // hardware protection are discarded, samples at its power cap are kept and counted.
    const bool burst = backend.measures_sustained();
    std::string why;
    std::unique_ptr<Telemetry> telemetry = backend.telemetry(c, why);
    if (!telemetry && !why.empty()) r.details["telemetry"] = why;
    const double t0 = now_s();
    if (telemetry) telemetry->start();
    if (burst && options.cooldown_s > 0) cool_down(c.device, options.cooldown_s);
    const double burst_from = now_s();

    auto base_timer = timer_for(backend, *impl, c);
    SampleTimer* timer = base_timer.get();
    std::optional<TelemetryTimer> watched;
    if (telemetry) timer = &watched.emplace(*timer, *telemetry);
    const CpuSample cpu_before = read_cpu_sample();  // what others ran meanwhile: see contention.hpp
    auto m = measure(*impl, r.copies, options.stopping, progress, cancel, timer);
    const CpuSample cpu_after = read_cpu_sample();
    if (m.reason == StopReason::cancelled) return finish(Status::error, kInterruptedReason);
    for (auto& [k, v] : timer->details()) r.details[k] = v;
    r.throttled_samples = m.discarded;
    if (m.discarded > 0) r.add_flag("throttled");
    if (m.samples.empty())
      return finish(Status::error, fmt::format("every sample ({}) was taken while the device slowed itself down ({})",
                                               m.discarded,
                                               watched ? clock_event_names(watched->slowdown_reasons()) : "unknown reason"));
    r.samples = std::move(m.samples);
    r.summary = summarize(r.samples);
    r.batch = m.batch;
    r.calls = m.calls;
    r.warmup_calls = m.warmup_calls;
    r.measured_s = m.measured_s;
    r.elapsed_s = m.elapsed_s;
    r.stop_reason = std::string(to_string(m.reason));
    if (m.reason == StopReason::timeout) r.add_flag("unconverged");
    if (m.reason == StopReason::plateau) r.add_flag("plateau");  // stopped short of the target: say so
    note_contention(r, contention(cpu_before, cpu_after, clock_ticks_per_s(), default_threads(), c.threads));
    const double burst_to = now_s();
    if (options.energy_window_s > 0) {
      if (burst)
        measure_sustained(r, *impl, c, backend, telemetry.get(), options, cancel);
      else
        measure_window_energy(r, *impl, c, backend, options, cancel);
      // A collective's energy is every rank's: summed over the launch (all ranks call this together).
      if (op.every_rank)
        if (scale::LaunchComm* comm = scale::launch_comm()) sum_energy_over_ranks(r, *comm);
    } else {
      r.energy_reason = kEnergyOffReason;  // the user's choice, not a missing sensor
    }
    if (burst) busy_until()[c.device] = now_s();
    if (telemetry) record_telemetry(r, telemetry->stop(), t0, burst_from, burst_to, watched ? &*watched : nullptr);
    derive_op_figures(op, r);
    if (op.ceiling == CeilingKind::compute) backend.annotate_ceiling(r);
    if (options.profile) profiled_sample(r, *impl, *base_timer, backend, op.every_rank);

    auto after = impl->verify(options.seed + 2);
    r.max_error = std::max(check.max_error, after.max_error);
    r.peak_memory_bytes = impl->allocates_elsewhere() ? impl->own_peak_memory() : backend.memory_peak(c);
    if (r.peak_memory_bytes && !impl->allocates_elsewhere())
      *r.peak_memory_bytes -= std::min(*r.peak_memory_bytes, impl->check_only_bytes());
    if (!after.ok) return finish(Status::failed, "wrong result after timing: " + after.detail);
    profile_pass(r, *impl, options);  // untimed, after the checks
    return finish(Status::ok, "");
  }));
}

Result check_case(const Case& c, const RunOptions& options) {
  RankGate gate(c);
  return gate.settle(guarded(c, [&](Result& r) {
    auto finish = [&](Status s, std::string reason) { return finished(r, s, std::move(reason)); };
    if (auto s = runnable_here(c); !s.ok) return finish(Status::skipped, s.reason);
    const OpDef& op = *Registry::global().op(c.op);
    Backend& backend = backend_of(c);
    r.work = op.work(c);
    if (auto s = fits_in_memory(c, op.footprint(c), backend.free_memory(c)); !s.ok) return finish(Status::skipped, s.reason);
    const ImplDef& impl_def = *Registry::global().impl(c.op, c.impl);
    if (auto no = gate.ready()) return finish(no->status, no->reason);
    ProfilerRange range(backend, r.case_string);
    omp_set_num_threads(c.threads);
    auto impl = backend.make(impl_def, c);
    impl->setup(c, {1, options.seed});
    if (auto no = gate.ready()) return finish(no->status, no->reason);
    r.details = impl->details();
    if (auto types = element_types(c); !types.empty()) r.details["types"] = types;
    auto check = impl->verify(options.seed + 1);  // poisons the output, runs once, compares
    r.max_error = check.max_error;
    r.tolerance = check.tolerance;
    if (!check.ok) return finish(Status::failed, "wrong result: " + check.detail);
    if (check.unchecked) r.add_flag("unchecked");
    for (auto& [name, metric] : check.metrics) r.set_metric(name, metric);
    return finish(Status::ok, "");
  }));
}

// A C plugin's case runs in a child by default. In process, a plugin that calls exit(0) ended
// the run "successfully" with no summary, and a segfault or abort ended it with no word of which
// case; exit hooks and signal handlers could name the case but not go on with the others. A child
// costs a process start per case, little beside a measurement.
namespace {
std::string plugin_of(const Case& c) {
  const ImplDef* def = Registry::global().impl(c.op, c.impl);
  return def ? def->plugin : "";
}
}  // namespace

bool runs_in_child(const Case& c, const RunOptions& options) {
  return options.isolate || (!plugin_of(c).empty() && !options.self_exe.empty());
}

Result run_in_child(const Case& c, const RunOptions& options, const std::atomic<bool>* cancel) {
  Result r = run_case_isolated(c, options, cancel);
  const std::string plugin = plugin_of(c);
  if (!plugin.empty() && (r.status == Status::crashed || r.status == Status::timeout))
    r.reason = fmt::format("{} (in plugin {})", r.reason, plugin);
  return r;
}

std::string Ceilings::where(const Case& c) { return backend_of(c).ceiling_key(c); }

void Ceilings::learn(const Result& r) {
  if (r.status != Status::ok) return;
  const OpDef* op = Registry::global().op(r.kase.op);
  if (!op) return;
  const std::string at = where(r.kase);
  // A ceiling measured while other processes took the CPUs is too low, and everything shown
  // against it looks faster than the machine: the flags' details say so.
  const Source source{r.case_string, r.has_flag("contended")};
  // The ceiling of a dtype is its fastest peak kernel: on a GPU the tensor-core ones (mma.sync,
  // wgmma) for tf32/fp16/bf16/fp8/int8 and the FMA chains for fp32.
  if (op->ceiling == CeilingKind::compute && r.gflops > 0) {
    auto& best = gflops_[{r.kase.dtype, at}];
    const double gflops = ceiling_gflops(r);
    if (gflops > best) gflops_from_[{r.kase.dtype, at}] = source;
    best = std::max(best, gflops);
  }
  if (op->ceiling == CeilingKind::memory && r.gbps > 0 && r.work.bytes() >= kMemoryCeilingMinBytes) {
    auto& best = gbps_[at];
    const double gbps = ceiling_gbps(r);
    if (gbps > best) gbps_from_[at] = source;
    best = std::max(best, gbps);
  }
}

void Ceilings::load_profile(const nlohmann::json& j) { load_profile(CalibrationProfile::from_json(j)); }

void Ceilings::load_profile(const CalibrationProfile& p) {
  // A device's profile holds for that device; the host's for its thread count.
  Case host;
  host.threads = p.threads;
  host.device = p.device;
  auto at = where(host);
  const Source from{fmt::format("the calibration profile of {}", p.created.empty() ? "unknown date" : p.created)};
  for (auto& [name, gflops] : p.peak_gflops) {
    const auto key = std::make_pair(*parse_dtype(name), at);
    if (gflops > gflops_[key]) gflops_from_[key] = from;
    gflops_[key] = std::max(gflops_[key], gflops);
  }
  if (p.bandwidth.memory_gbps > gbps_[at]) gbps_from_[at] = from;
  gbps_[at] = std::max(gbps_[at], p.bandwidth.memory_gbps);
}

std::optional<double> Ceilings::peak(DType d, const std::string& at) const {
  auto it = gflops_.find({d, at});
  return it == gflops_.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<double> Ceilings::bandwidth(const std::string& at) const {
  auto it = gbps_.find(at);
  return it == gbps_.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<double> Ceilings::peak(DType d, int threads) const { return peak(d, where(Case{.threads = threads})); }
std::optional<double> Ceilings::bandwidth(int threads) const { return bandwidth(where(Case{.threads = threads})); }

void Ceilings::annotate(Result& r) const {
  if (r.status != Status::ok) return;
  const OpDef* op = Registry::global().op(r.kase.op);
  if (!op) return;
  // A ceiling case says the rate it bounds the others with (ceiling_rate: its fastest tenth).
  if (op->ceiling == CeilingKind::compute && r.gflops > 0)
    r.details["ceiling_gflops"] = fmt::format("{:.4g}", ceiling_gflops(r));
  if (op->ceiling == CeilingKind::memory && r.gbps > 0) r.details["ceiling_gbps"] = fmt::format("{:.4g}", ceiling_gbps(r));
  const std::string at = where(r.kase);
  // The ceiling cases a result is rated against that were contended: the run warns of them.
  auto from = [&r](const auto& sources, const auto& key) {
    auto it = sources.find(key);
    if (it == sources.end()) return std::string();
    if (const Source& s = it->second; s.contended) {
      auto& listed = r.details["contended_ceilings"];
      if (("; " + listed + "; ").find("; " + s.name + "; ") == std::string::npos)  // whole names, once
        listed += (listed.empty() ? "" : "; ") + s.name;
    }
    return it->second.text();
  };
  if (op->peak_dtype)
    if (auto dtype = op->peak_dtype(r.kase))
      if (auto p = backend_of(r.kase).compute_ceiling(r, *dtype, peak(*dtype, at))) {
        if (p->source.empty()) {
          apply_peak(r, p->gflops, from(gflops_from_, std::pair{*dtype, at}));
        } else {  // a datasheet rate is a hard ceiling: anything above it is suspect
          r.details["peak_source"] = p->source;
          apply_peak(r, p->gflops, p->source, 100.0);
        }
      }
  if (op->uses_memory && op->ceiling != CeilingKind::memory)
    if (auto b = bandwidth(at)) apply_roofline(r, *b, from(gbps_from_, at));
}

Case ceiling_case(const std::string& op, DType dtype, std::vector<std::pair<std::string, std::string>> params,
                  int threads) {
  Case c;
  c.op = op;
  c.impl = "opmeter";
  c.dtype = dtype;
  c.params = std::move(params);
  c.threads = threads;
  return c;
}

namespace {
// Ceiling cases first, so every later result can be shown against them as it finishes.
std::vector<Case> ceilings_first(std::vector<Case> cases) {
  std::stable_partition(cases.begin(), cases.end(), [](const Case& c) { return ceiling_of(c.op) != CeilingKind::none; });
  return cases;
}
}  // namespace

std::vector<Case> with_needed_peaks(const std::vector<Case>& cases, std::size_t bandwidth_elements,
                                    const Ceilings& known) {
  const auto& reg = Registry::global();
  std::set<std::pair<DType, std::string>> have, need;  // compute ceilings by (dtype, where)
  std::set<std::string> have_memory, need_memory;       // memory ceilings by where
  std::map<std::string, Case> like;                     // a case per where: ceilings run beside it
  for (auto& c : cases) {
    const OpDef* op = reg.op(c.op);
    if (!op) continue;
    const std::string at = Ceilings::where(c);
    like.emplace(at, c);
    if (op->ceiling == CeilingKind::compute) have.insert({c.dtype, at});
    // A bandwidth case too small to stream from memory is no ceiling (Ceilings::learn): the
    // default-sized one is added beside it.
    if (op->ceiling == CeilingKind::memory && op->work(c).bytes() >= kMemoryCeilingMinBytes) have_memory.insert(at);
    if (op->peak_dtype && op->ceiling != CeilingKind::compute)
      if (auto d = op->peak_dtype(c); d && !known.peak(*d, at)) need.insert({*d, at});
    if (op->uses_memory && !op->defaults.empty() && bandwidth_elements > 0 && !known.bandwidth(at))
      need_memory.insert(at);
  }
  // A ceiling case only where an impl of the ceiling op takes the dtype there: fp16 on a CPU has
  // no peak kernel, and a case planned only to be skipped says nothing.
  auto takes = [&](const OpDef& op, DType d, const Case& where) {
    const std::string backend = backend_of(where).name();
    for (auto* impl : reg.impls_of(op.name))
      if (impl->runs_on(backend) && std::find(impl->dtypes.begin(), impl->dtypes.end(), d) != impl->dtypes.end()) return true;
    return false;
  };
  std::vector<Case> out;
  for (auto* op : reg.ops())  // compute ceilings, then memory ones
    if (op->ceiling == CeilingKind::compute && op->ceiling_cases)
      for (auto& [dtype, at] : need)
        if (!have.count({dtype, at}) && takes(*op, dtype, like.at(at)))
          for (auto& c : op->ceiling_cases(dtype, like.at(at), 0)) out.push_back(c);
  for (auto* op : reg.ops())
    if (op->ceiling == CeilingKind::memory && op->ceiling_cases)
      for (auto& at : need_memory)
        if (!have_memory.count(at))
          for (auto& c : op->ceiling_cases(DType::fp32, like.at(at), bandwidth_elements)) out.push_back(c);
  for (auto& c : ceilings_first(cases)) out.push_back(c);
  return out;
}

std::vector<Result> run_all(const std::vector<Case>& cases, std::vector<Result> previous, const RunOptions& options,
                            Reporter& reporter, const std::atomic<bool>* cancel) {
  Ceilings ceilings;
  if (options.calibration) ceilings.load_profile(*options.calibration);
  std::set<std::string> done;
  for (auto& r : previous) {
    done.insert(r.case_string);
    ceilings.learn(r);
  }
  std::vector<Result> all = std::move(previous);
  // Ceilings before the results they bound (--case may list them in any order): each result is
  // annotated once, as it is reported.
  const std::vector<Case> ordered = ceilings_first(cases);
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    if (cancel && cancel->load()) break;
    const Case& c = ordered[i];
    if (done.count(c.to_string())) {
      RankGate(c).vote_done();  // the other ranks of a collective learn that this one will not run it
      continue;
    }
    reporter.case_started(i, c);
    Result r;
    if (runs_in_child(c, options)) {
      r = run_in_child(c, options, cancel);
    } else {
      r = run_case(c, options, [&](const RunningStats& s, double) {
        reporter.progress(s.mean(), s.rel_noise(), s.count());
      }, cancel);
    }
    if (cut_by_interrupt(r, cancel)) break;  // half-measured: not a result
    ceilings.learn(r);
    ceilings.annotate(r);
    reporter.report(r);
    all.push_back(std::move(r));
  }
  reporter.end(all);
  return all;
}

}  // namespace opmeter
