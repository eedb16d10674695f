#include "opmeter/runner.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "opmeter/buffer.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/sensor.hpp"
#include "opmeter/telemetry.hpp"
#include "ops/peak/datasheet.hpp"
#include "ops/peak/peak.hpp"

namespace opmeter {
namespace {
constexpr std::size_t kMaxCopies = 256;
constexpr double kMemoryHeadroom = 0.8;  // of available memory a case may take

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / double(1u << 30)); }
}  // namespace

std::size_t cold_copies(double footprint, std::size_t llc_bytes, double budget) {
  if (!(footprint > 0)) return 1;
  double want = std::ceil(2.0 * static_cast<double>(llc_bytes) / footprint);
  double affordable = std::floor(budget / footprint);
  return static_cast<std::size_t>(std::clamp(std::min(want, affordable), 1.0, double(kMaxCopies)));
}

namespace {

// A sample timer that opens the profiler's capture range around the one profiled sample.
class ProfiledTimer : public SampleTimer {
 public:
  ProfiledTimer(SampleTimer& inner, cuda::Plugin* plugin) : inner_(inner), plugin_(plugin) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    if (plugin_) plugin_->profiler_start();
    auto t = inner_.time(calls, call);
    if (plugin_) plugin_->profiler_stop();
    return t;
  }
  std::size_t fixed_batch() const override { return 1; }
  std::map<std::string, std::string> details() const override { return inner_.details(); }

 private:
  SampleTimer& inner_;
  cuda::Plugin* plugin_;
};

// NVTX range named by the case string, so Nsight timelines show which case ran when.
struct NvtxRange {
  NvtxRange(cuda::Plugin* p, const std::string& name) : plugin(p) {
    if (plugin) plugin->range_push(name);
  }
  ~NvtxRange() {
    if (plugin) plugin->range_pop();
  }
  cuda::Plugin* plugin;
};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// When each GPU last ran timed work: the cool-down before a burst counts the idle time since
// (the previous case's check and this case's setup), and sleeps only for the rest.
std::map<int, double>& gpu_busy_until() {
  static std::map<int, double> busy;
  return busy;
}

void cool_down(int device, double seconds) {
  auto it = gpu_busy_until().find(device);
  double idle = it == gpu_busy_until().end() ? seconds : now_s() - it->second;
  if (idle < seconds) std::this_thread::sleep_for(std::chrono::duration<double>(seconds - idle));
}

// The sustained figure and the energy per call: calls run back to back until the GPU's power
// settles (at most heat_max_s), then hot samples of >= 10 ms each are timed for
// energy_window_s while NVML's energy counter runs.
void measure_sustained(Result& r, Impl& impl, const Case& c, cuda::Plugin& gpu, Telemetry* telemetry,
                       const RunOptions& options, const std::atomic<bool>* cancel) {
  auto batch = static_cast<std::size_t>(std::max(static_cast<double>(r.batch), std::ceil(0.01 / r.summary.median)));
  double heat_start = now_s();
  // Without telemetry nothing says when power settled: heat for a fixed second.
  double heat_s = telemetry ? options.heat_max_s : std::min(1.0, options.heat_max_s);
  run_for(impl, batch, heat_s, cancel, [&] { return telemetry && power_steady(telemetry->snapshot()); });
  r.details["sustained_heat_s"] = fmt::format("{:.2f}", now_s() - heat_start);

  Case hot = c;  // the window's samples are back to back: no L2 flush, no graph
  hot.hot = true;
  hot.graph = 0;
  auto device_timer = gpu.timer(hot);
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

}  // namespace

Result run_case(const Case& c, const RunOptions& options, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  Result r;
  r.kase = c;
  r.case_string = c.to_string();
  auto finish = [&](Status s, std::string reason) {
    r.status = s;
    r.reason = std::move(reason);
    r.timestamp = utc_now_iso();
    return r;
  };
  try {
    validate_case(c);
    const auto& reg = Registry::global();
    const OpDef& op = *reg.op(c.op);
    const ImplDef& impl_def = *reg.impl(c.op, c.impl);
    if (std::find(impl_def.dtypes.begin(), impl_def.dtypes.end(), c.dtype) == impl_def.dtypes.end())
      return finish(Status::skipped, fmt::format("{} has no {} {}", c.impl, to_string(c.dtype), c.op));
    if (auto s = impl_def.supports(c); !s.ok) return finish(Status::skipped, s.reason);

    r.work = op.work(c);
    double footprint = op.footprint(c);
    cuda::Plugin* gpu = c.on_cuda() ? cuda::plugin() : nullptr;
    double available = gpu ? static_cast<double>(gpu->free_memory(c.cuda_index()))
                           : static_cast<double>(available_memory_bytes());
    if (footprint > kMemoryHeadroom * available)
      return finish(Status::skipped, fmt::format("needs {} of memory, {} available on {}", gib(footprint), gib(available),
                                                 gpu ? c.device : "the host"));
    r.cache = !op.uses_memory ? "none" : c.hot ? "hot" : "cold";
    // A GPU sample is cold because the timer flushes L2 before it; the CPU rotates input copies.
    r.copies = r.cache == "cold" && !gpu ? cold_copies(footprint, llc_bytes(),
                                                       std::min(0.25 * available, 4.0 * (1u << 30)))
                                         : 1;

    NvtxRange range(gpu, r.case_string);
    omp_set_num_threads(c.threads);
    auto live_before = Buffer::live_bytes();
    Buffer::reset_peak();
    auto impl = gpu ? gpu->make(c) : impl_def.make();
    impl->setup(c, {r.copies, options.seed});
    r.details = impl->details();

    auto check = impl->verify(options.seed + 1);
    r.max_error = check.max_error;
    r.tolerance = check.tolerance;
    if (!check.ok) return finish(Status::failed, "wrong result before timing: " + check.detail);

    // A GPU is watched through the case: samples it slowed down by heat or hardware protection
    // are discarded, samples at its power cap are kept and counted.
    std::unique_ptr<Telemetry> telemetry;
    if (gpu) {
      std::string why;
      if (auto device = cuda::nvml_device(c.cuda_index(), why))
        telemetry = std::make_unique<Telemetry>(Nvml::instance(), *device);
      else
        r.details["telemetry"] = why;
    }
    const double t0 = now_s();
    if (telemetry) telemetry->start();
    if (gpu && options.cooldown_s > 0 && !options.profile) cool_down(c.cuda_index(), options.cooldown_s);
    const double burst_from = now_s();

    auto device_timer = gpu ? gpu->timer(c) : nullptr;
    HostTimer host_timer(*impl);
    SampleTimer* timer = device_timer ? device_timer.get() : &host_timer;
    std::optional<TelemetryTimer> watched;
    if (telemetry) timer = &watched.emplace(*timer, *telemetry);
    Stopping stopping = options.stopping;
    std::optional<ProfiledTimer> profiled;
    if (options.profile) {  // one sample of one call after warm-up, inside the capture range
      profiled.emplace(*timer, gpu);
      timer = &*profiled;
      stopping.fixed_samples = 1;
    }
    auto m = measure(*impl, r.copies, stopping, progress, cancel, timer);
    if (m.reason == StopReason::cancelled) return finish(Status::error, "interrupted");
    for (auto& [k, v] : timer->details()) r.details[k] = v;
    r.throttled_samples = m.discarded;
    if (m.discarded > 0) r.add_flag("throttled");
    if (m.samples.empty())
      return finish(Status::error, fmt::format("every sample ({}) was taken while the GPU slowed itself down ({})", m.discarded,
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
    const double burst_to = now_s();
    if (gpu && !options.profile && options.energy_window_s > 0)
      measure_sustained(r, *impl, c, *gpu, telemetry.get(), options, cancel);
    if (gpu) gpu_busy_until()[c.cuda_index()] = now_s();
    if (telemetry) record_telemetry(r, telemetry->stop(), t0, burst_from, burst_to, watched ? &*watched : nullptr);
    derive_rates(r);
    if (gpu && c.op == "peak") compare_with_datasheet(r, gpu->device_context(c.cuda_index()).value("name", ""));

    auto after = impl->verify(options.seed + 2);
    r.max_error = std::max(check.max_error, after.max_error);
    r.peak_memory_bytes = Buffer::peak_bytes() - live_before;
    if (!after.ok) return finish(Status::failed, "wrong result after timing: " + after.detail);
    return finish(Status::ok, "");
  } catch (const Unsupported& e) {
    return finish(Status::skipped, e.what());
  } catch (const std::bad_alloc&) {
    return finish(Status::error, "out of memory while setting up the case");
  } catch (const std::exception& e) {
    return finish(Status::error, e.what());
  }
}

// A GPU peak result beside NVIDIA's datasheet: the dense rate of its dtype, that rate scaled to the
// SM clock the samples ran at (NVML's median over the burst), and the measured share of it.
void compare_with_datasheet(Result& r, const std::string& gpu_name) {
  auto sheet = peak::datasheet(gpu_name);
  if (!sheet) {
    r.details["datasheet"] = fmt::format("no datasheet known for '{}'", gpu_name);
    return;
  }
  auto tflops = sheet->tflops(r.kase.dtype);
  if (!tflops || !(r.gflops > 0)) return;
  r.details["datasheet_tflops"] = fmt::format("{:.1f} at {:.0f} MHz", *tflops, sheet->clock_mhz(r.kase.dtype));
  auto clock = r.details.find("sm_clock_median_mhz");
  if (clock == r.details.end()) return;  // no NVML: no clock to scale to
  double mhz = std::atof(clock->second.c_str());
  double expected = peak::at_clock(*tflops, mhz, sheet->clock_mhz(r.kase.dtype));
  if (!(expected > 0)) return;
  r.details["datasheet_at_clock_tflops"] = fmt::format("{:.1f} at {:.0f} MHz", expected, mhz);
  r.details["pct_of_datasheet_at_clock"] = fmt::format("{:.1f}", 100 * r.gflops / 1000 / expected);
}

std::string Ceilings::where(const Case& c) { return c.on_cuda() ? c.device : fmt::format("threads={}", c.threads); }

void Ceilings::learn(const Result& r) {
  if (r.status != Status::ok) return;
  const std::string at = where(r.kase);
  // The ceiling of a dtype is its fastest peak kernel: on a GPU the tensor-core ones (mma.sync,
  // wgmma) for tf32/fp16/bf16/fp8/int8 and the FMA chains for fp32.
  if (r.kase.op == "peak" && r.gflops > 0) {
    auto& best = gflops_[{r.kase.dtype, at}];
    best = std::max(best, r.gflops);
  }
  if (r.kase.op == "bandwidth" && r.gbps > 0 && r.work.bytes() >= kMemoryCeilingMinBytes) {
    auto& best = gbps_[at];
    best = std::max(best, r.gbps);
  }
}

void Ceilings::load_profile(const nlohmann::json& p) {
  if (!p.is_object() || p.value("schema", "") != kCalibrationSchema)
    throw UsageError(fmt::format("not an opmeter calibration profile (expected \"schema\": \"{}\")", kCalibrationSchema));
  try {
    auto at = fmt::format("threads={}", p.at("threads").get<int>());
    for (auto& [name, v] : p.at("peak_gflops").items())
      if (auto d = parse_dtype(name)) gflops_[{*d, at}] = std::max(gflops_[{*d, at}], v.get<double>());
    gbps_[at] = std::max(gbps_[at], p.at("bandwidth").at("memory_gbps").get<double>());
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("calibration profile is malformed: ") + e.what());
  }
}

std::optional<double> Ceilings::peak(DType d, const std::string& at) const {
  auto it = gflops_.find({d, at});
  return it == gflops_.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<double> Ceilings::bandwidth(const std::string& at) const {
  auto it = gbps_.find(at);
  return it == gbps_.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<double> Ceilings::peak(DType d, int threads) const { return peak(d, fmt::format("threads={}", threads)); }
std::optional<double> Ceilings::bandwidth(int threads) const { return bandwidth(fmt::format("threads={}", threads)); }

void Ceilings::annotate(Result& r) const {
  if (r.status != Status::ok) return;
  const OpDef* op = Registry::global().op(r.kase.op);
  if (!op) return;
  const std::string at = where(r.kase);
  if (op->peak_dtype)
    if (auto dtype = op->peak_dtype(r.kase))
      if (auto p = peak(*dtype, at)) apply_peak(r, *p);
  if (op->uses_memory && r.kase.op != "bandwidth")
    if (auto b = bandwidth(at)) apply_roofline(r, *b);
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

std::vector<Case> with_needed_peaks(const std::vector<Case>& cases, std::size_t bandwidth_elements, bool have_profile) {
  std::set<std::pair<DType, int>> have, need;
  std::set<int> have_bw, need_bw;
  std::set<std::pair<DType, std::string>> have_gpu, need_gpu;  // (dtype, device) with / needing peak cases
  for (auto& c : cases) {
    if (c.on_cuda()) {
      if (c.op == "peak") have_gpu.insert({c.dtype, c.device});
      const OpDef* op = Registry::global().op(c.op);
      if (op && op->peak_dtype && c.op != "peak")
        if (auto d = op->peak_dtype(c)) need_gpu.insert({*d, c.device});
      continue;
    }
    if (c.op == "peak") have.insert({c.dtype, c.threads});
    if (c.op == "bandwidth") have_bw.insert(c.threads);
    const OpDef* op = Registry::global().op(c.op);
    if (op && op->peak_dtype)
      if (auto d = op->peak_dtype(c)) need.insert({*d, c.threads});
    if (op && !op->defaults.empty() && bandwidth_elements > 0) need_bw.insert(c.threads);
  }
  std::vector<Case> out;
  auto ceiling = [&](const std::string& op, DType d, std::vector<std::pair<std::string, std::string>> params, int t) {
    out.push_back(ceiling_case(op, d, std::move(params), t));
  };
  if (!have_profile) {
    for (auto& [d, t] : need)
      if (!have.count({d, t})) ceiling("peak", d, {{"kernel", "fma"}}, t);
    for (int t : need_bw)
      if (!have_bw.count(t)) ceiling("bandwidth", DType::fp32, {{"kernel", "copy"}, {"n", std::to_string(bandwidth_elements)}}, t);
  }
  for (auto& [dtype, device] : need_gpu)
    if (!have_gpu.count({dtype, device}))
      for (auto& kernel : peak::kernels_for(dtype, true)) {  // the GPU skips kernels it lacks
        Case peak = ceiling_case("peak", dtype, {{"kernel", kernel}}, 1);
        peak.impl = "cuda";
        peak.device = device;
        out.push_back(peak);
      }
  // Ceilings first, so every later result can be shown against them as it finishes.
  for (auto& c : cases)
    if (c.op == "peak" || c.op == "bandwidth") out.push_back(c);
  for (auto& c : cases)
    if (c.op != "peak" && c.op != "bandwidth") out.push_back(c);
  return out;
}

std::vector<Result> run_all(const std::vector<Case>& cases, std::vector<Result> previous, const RunOptions& options,
                            Reporter& reporter, const std::atomic<bool>* cancel) {
  Ceilings ceilings;
  if (!options.calibration.is_null()) ceilings.load_profile(options.calibration);
  std::set<std::string> done;
  for (auto& r : previous) {
    done.insert(r.case_string);
    ceilings.learn(r);
  }
  std::vector<Result> all = std::move(previous);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cancel && cancel->load()) break;
    const Case& c = cases[i];
    if (done.count(c.to_string())) continue;
    reporter.case_started(i, c);
    Result r;
    if (options.isolate) {
      r = run_case_isolated(c, options, cancel);
    } else {
      r = run_case(c, options, [&](const RunningStats& s, double) {
        reporter.progress(s.mean(), s.rel_noise(), s.count());
      }, cancel);
    }
    if (cancel && cancel->load() && r.reason == "interrupted") break;  // half-measured: not a result
    ceilings.learn(r);
    ceilings.annotate(r);
    reporter.report(r);
    all.push_back(std::move(r));
  }
  // A GPU's peak cases may come after results they bound (given in any order by --case).
  for (auto& r : all)
    if (r.kase.on_cuda()) ceilings.annotate(r);
  reporter.end(all);
  return all;
}

}  // namespace opmeter
