// CUDA devices (`cuda:N`) as a backend: everything it does goes through the CUDA plugin, which
// makes the impls (their definitions are in each op's folder); NVML watches the device through
// each case.
#include <charconv>

#include <fmt/format.h>

#include "opmeter/backend.hpp"
#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/result.hpp"
#include "sensors/telemetry.hpp"
#include "cuda/datasheet.hpp"

namespace opmeter::cuda {
namespace {

constexpr int kMaxGraphLaunches = 100000;
constexpr int kMaxDevices = 1024;

// Impls the plugin does not make: their definition brings its own `make`.
bool made_elsewhere(const Case& c) {
  const ImplDef* def = Registry::global().impl(c.op, c.impl);
  return def && def->make;
}

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string device_grammar() const override { return "cuda:N"; }
  std::string description() const override { return "a CUDA device"; }
  bool owns(const std::string& device) const override {
    if (device.rfind("cuda:", 0) != 0) return false;
    int n = -1;
    auto [end, ec] = std::from_chars(device.data() + 5, device.data() + device.size(), n);
    return ec == std::errc() && end == device.data() + device.size() && n >= 0 && n < kMaxDevices;
  }
  std::vector<SettingDef> settings() const override {
    return {{.name = "graph",
             .help = "graph=N (CUDA Graph mode)",
             .check = [](const std::string& v) {
               int n = 0;
               auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
               if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > kMaxGraphLaunches)
                 throw UsageError(fmt::format("graph must be the launches per graph, 1..{}", kMaxGraphLaunches));
             },
             .flag_help = "CUDA cases: capture N back-to-back launches in one CUDA graph per sample (0: off)",
             .max = kMaxGraphLaunches,
             .pipeline_default = "100",  // a pipeline's small kernels would time their launch gaps
             .batches_launches = true}};
  }

  std::string first_device() const override { return "cuda:0"; }
  Support ready() override { return plugin() ? Support::yes() : Support::no(load_reason()); }
  Support device_ready(const std::string& device) override {
    if (auto s = ready(); !s.ok) return s;
    Case on;
    on.device = device;
    return plugin()->device(on.device_index());
  }
  Support supports(const Case& c) override {
    if (auto s = plugin()->device(c.device_index()); !s.ok) return s;
    if (made_elsewhere(c)) return Support::yes();  // the impl says for itself (a worker's, a C plugin's)
    return plugin()->supports(c);
  }
  double free_memory(const Case& c) override { return static_cast<double>(plugin()->free_memory(c.device_index())); }
  // What the plugin's impls allocate on the device (impls made elsewhere say for themselves).
  void mark_memory(const Case& c) override { plugin()->mark_memory(c.device_index()); }
  std::optional<std::size_t> memory_peak(const Case& c) override { return plugin()->memory_peak(c.device_index()); }

  std::unique_ptr<Impl> make(const ImplDef& def, const Case& c) override { return def.make ? def.make() : plugin()->make(c); }
  std::unique_ptr<SampleTimer> timer(Impl&, const Case& c) override { return plugin()->timer(c); }
  bool timer_makes_cold() const override { return true; }
  bool rotates_inputs(const Impl& impl, const Case& c) const override { return impl.rotates_inputs(c); }
  std::optional<std::size_t> cache_bytes(const Case& c) const override {
    const auto l2 = plugin()->device_context(c.device_index()).value("l2_bytes", std::size_t{0});
    return l2 > 0 ? std::optional(l2) : std::nullopt;
  }
  // Graph mode's launches run back to back, with no flush: cold there only by rotating copies.
  std::optional<std::size_t> calls_per_replay(const Case& c) const override {
    const auto n = c.setting_int("graph");
    return n > 0 ? std::optional(static_cast<std::size_t>(n)) : std::nullopt;
  }
  std::unique_ptr<Telemetry> telemetry(const Case& c, std::string& why) override {
    auto device = nvml_device(c.device_index(), why);
    return device ? std::make_unique<Telemetry>(Nvml::instance(), *device) : nullptr;
  }
  bool measures_sustained() const override { return true; }
  void range_push(const std::string& name) override { plugin()->range_push(name); }
  void range_pop() override { plugin()->range_pop(); }
  void profiler_start() override { plugin()->profiler_start(); }
  void profiler_stop() override { plugin()->profiler_stop(); }

  nlohmann::json context(const std::vector<std::string>& devices) override {
    std::vector<int> indices;
    for (auto& d : devices) indices.push_back(Case{.device = d}.device_index());
    return gpu_context(indices);
  }
  void annotate_ceiling(Result& r) override {
    compare_with_datasheet(r, plugin()->device_context(r.kase.device_index()).value("name", ""));
  }
  std::optional<ComputeCeiling> compute_ceiling(const Result& r, DType d, std::optional<double> measured) override {
    std::optional<double> sheet;
    if (auto* p = plugin(); p && p->device(r.kase.device_index()).ok)
      sheet = peak::datasheet_gflops_at_clock(r, d, p->device_context(r.kase.device_index()).value("name", ""));
    auto c = peak::choose_gpu_ceiling(measured, sheet);
    if (!c) return std::nullopt;
    return ComputeCeiling{c->gflops, c->from_datasheet ? c->note : ""};
  }
};

const BackendRegistrar reg(std::make_unique<CudaBackend>());

}  // namespace
}  // namespace opmeter::cuda
