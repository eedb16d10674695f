#pragma once
// Where cases run. A backend owns a family of devices (`cpu`; `cuda:N`; later e.g. a worker
// process), says whether one can run work, makes impls, times their samples, watches the device
// and says where its ceilings hold. The runner, the case parser and the config reader know only
// this interface: each backend registers itself (BackendRegistrar).
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/case.hpp"
#include "opmeter/energy_counter.hpp"
#include "opmeter/engine.hpp"
#include "opmeter/op.hpp"
#include "opmeter/registry.hpp"

namespace opmeter {

struct Result;
class Telemetry;

// A setting a case on one backend may carry in its settings part (CUDA's `graph=N`).
struct SettingDef {
  std::string name;
  std::string help;                               // for messages: "graph=N (launches per CUDA graph)"
  std::function<void(const std::string&)> check;  // throws UsageError naming what is expected
  // `run --NAME N` sets it on every case of the backend; N is 0..max, 0 turns it off.
  std::string flag_help;
  int max = 0;
  std::string pipeline_default;  // what a pipeline's layers get unless the config says (empty: nothing)
  // It batches a small kernel's launches into one sample (CUDA's graph): dropped where samples
  // run back to back anyway (the sustained window) and where a whole model is timed.
  bool batches_launches = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // --- Devices and case strings ---
  // The name impls give as ImplDef::backend: "cpu", "cuda".
  virtual std::string name() const = 0;
  // How its devices are written, for messages: "cpu", "cuda:N".
  virtual std::string device_grammar() const = 0;
  // Where it runs, in words, for messages: "the CPU", "a CUDA device".
  virtual std::string description() const = 0;
  // Whether `device` is one of its devices. Throws UsageError for a malformed name of its own
  // family (`cuda:x`), saying what is expected.
  virtual bool owns(const std::string& device) const = 0;
  // The device `opmeter list` probes: "cpu", "cuda:0".
  virtual std::string first_device() const = 0;
  // Settings its cases may carry beyond threads=N / device=... and hot.
  virtual std::vector<SettingDef> settings() const { return {}; }

  // --- Availability ---
  // Whether the backend can run anything here (a plugin loaded, a driver present); the reason
  // when not. Cases of an unready backend are `skipped` with it.
  virtual Support ready() = 0;
  // Whether the device named (cuda:1) can run anything: ready(), and the device there.
  virtual Support device_ready(const std::string& /*device*/) { return ready(); }
  // Whether this case can run on its device (device present, dtype by architecture).
  virtual Support supports(const Case& c) = 0;
  // Impl definitions the backend brings itself (a plugin's), registered when first asked for.
  virtual std::vector<ImplDef> impls() { return {}; }
  // Bytes a case may still allocate on its device.
  virtual double free_memory(const Case& c) = 0;
  // Allocation high-water mark of a case on its device: mark_memory before its setup, then
  // memory_peak is the most bytes allocated since, above what was allocated at the mark (host:
  // opmeter's buffers; a GPU: its device allocations). Empty where the backend cannot tell.
  virtual void mark_memory(const Case& c);
  virtual std::optional<std::size_t> memory_peak(const Case& c);

  // --- Measuring ---
  virtual std::unique_ptr<Impl> make(const ImplDef& def, const Case& c);
  // How samples are timed: the host's clock by default; a device's events.
  virtual std::unique_ptr<SampleTimer> timer(Impl& impl, const Case& c);
  // Whether the timer itself makes each sample cold (a GPU flushes its L2 before it), so the
  // runner need not rotate input copies; never where samples replay captured calls (below).
  virtual bool timer_makes_cold() const { return false; }
  // Whether `impl` rotates its input copies when the runner asks it to (the host's impls all do;
  // a device's say for themselves: Impl::rotates_inputs).
  virtual bool rotates_inputs(const Impl&, const Case&) const { return true; }
  // The cache that cold copies must together exceed (a GPU's L2); empty: the host's last level.
  virtual std::optional<std::size_t> cache_bytes(const Case&) const { return std::nullopt; }
  // Where every sample replays the same captured calls (a CUDA graph of N launches): N, which
  // bounds the input copies a sample can read. Empty: calls go on over the copies across samples.
  virtual std::optional<std::size_t> calls_per_replay(const Case&) const { return std::nullopt; }
  // A poller of the device's clock, power and temperature through the case; null, with `why`,
  // when the device has none. A backend with telemetry gets the burst/sustained protocol:
  // cool-down, burst samples, heating, a sustained window with its energy.
  virtual std::unique_ptr<Telemetry> telemetry(const Case& c, std::string& why);
  // Whether results get a sustained figure and energy per call (the burst/sustained protocol).
  virtual bool measures_sustained() const { return false; }
  // Counters of the energy the device draws (the CPU's RAPL); null, with `why`, where it has none
  // (`why` empty: the backend has no energy at all). Without the burst/sustained protocol, a
  // case's energy per call is read from it over a window of back-to-back calls after timing.
  virtual std::unique_ptr<EnergyCounter> energy_counter(const Case& c, std::string& why);
  // A profiler range around each case, and the capture range around the profiled sample.
  virtual void range_push(const std::string&) {}
  virtual void range_pop() {}
  virtual void profiler_start() {}
  virtual void profiler_stop() {}

  // --- Context and ceilings ---
  // What results' context records about the run's devices of this backend (e.g. "gpus", "cuda").
  virtual nlohmann::json context(const std::vector<std::string>& /*devices*/) { return nlohmann::json::object(); }
  // Which device a ceiling holds for: `threads=N` on the CPU, the device name elsewhere.
  virtual std::string ceiling_key(const Case& c) const { return c.device; }
  // After a compute-ceiling result is measured: what the backend knows to put beside it (a GPU's
  // datasheet rate at the clock it ran at).
  virtual void annotate_ceiling(Result&) {}
  // The compute ceiling `r`'s % of peak is taken against, given the fastest peak measured for its
  // dtype where it runs (empty: none ran). By default that peak; a GPU backend takes its
  // datasheet's rate where its own peak kernels cannot reach it, and says so in `source`.
  struct ComputeCeiling {
    double gflops = 0;
    std::string source;  // empty: the measured peak
  };
  virtual std::optional<ComputeCeiling> compute_ceiling(const Result&, DType, std::optional<double> measured_gflops) {
    if (!measured_gflops) return std::nullopt;
    return ComputeCeiling{*measured_gflops, ""};
  }

 private:
  std::size_t host_bytes_at_mark_ = 0;
};

// Backends register themselves (a static BackendRegistrar in their own file).
void register_backend(std::unique_ptr<Backend> backend);
struct BackendRegistrar {
  explicit BackendRegistrar(std::unique_ptr<Backend> backend) { register_backend(std::move(backend)); }
};
std::vector<Backend*> backends();
// The backend owning a device name. Throws UsageError naming every backend's grammar when none
// does ("unknown device 'x' (expected cpu or cuda:N, e.g. cuda:0)").
Backend& backend_of(const std::string& device);
inline Backend& backend_of(const Case& c) { return backend_of(c.device); }
// Drops the settings of the case's backend that batch launches (SettingDef::batches_launches).
void drop_launch_batching(Case& c);
// The backend named by ImplDef::backend; null when none is.
Backend* backend_named(const std::string& name);

}  // namespace opmeter
