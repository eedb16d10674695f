// NVML through dlopen, with the few functions opmeter uses declared here (the poller that reads
// them is in telemetry.cpp).
#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

#include "opmeter/sensor.hpp"

namespace opmeter {
namespace {
constexpr int kSuccess = 0;
constexpr int kEnableStateEnabled = 1;

std::string default_library() {
  const char* env = std::getenv("OPMETER_NVML_LIBRARY");
  return env && *env ? env : "libnvidia-ml.so.1";
}
}  // namespace

struct Nvml::Api {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*by_index)(unsigned, Device*) = nullptr;
  int (*by_pci)(const char*, Device*) = nullptr;
  int (*energy)(Device, unsigned long long*) = nullptr;  // optional: Volta and newer
  int (*power)(Device, unsigned*) = nullptr;
  int (*power_limit)(Device, unsigned*) = nullptr;
  int (*power_limit_default)(Device, unsigned*) = nullptr;
  int (*clock)(Device, unsigned, unsigned*) = nullptr;
  int (*temperature)(Device, unsigned, unsigned*) = nullptr;
  int (*reasons)(Device, unsigned long long*) = nullptr;
  int (*ecc)(Device, int*, int*) = nullptr;
  int (*mig)(Device, unsigned*, unsigned*) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;
};

Nvml::Nvml(const std::string& library) : api_(std::make_unique<Api>()) {
  auto path = library.empty() ? default_library() : library;
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    reason_ = fmt::format("NVML is not available ({} does not load: {})", path, dlerror());
    return;
  }
  auto sym = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle_, name)); };
  sym(api_->init, "nvmlInit_v2");
  sym(api_->shutdown, "nvmlShutdown");
  sym(api_->error_string, "nvmlErrorString");
  sym(api_->by_index, "nvmlDeviceGetHandleByIndex_v2");
  sym(api_->by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  sym(api_->energy, "nvmlDeviceGetTotalEnergyConsumption");
  sym(api_->power, "nvmlDeviceGetPowerUsage");
  sym(api_->power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  sym(api_->power_limit_default, "nvmlDeviceGetPowerManagementDefaultLimit");
  sym(api_->clock, "nvmlDeviceGetClockInfo");
  sym(api_->temperature, "nvmlDeviceGetTemperature");
  // Renamed in driver 535 ("throttle" became "clocks event"); older drivers have the old name.
  sym(api_->reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!api_->reasons) sym(api_->reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  sym(api_->ecc, "nvmlDeviceGetEccMode");
  sym(api_->mig, "nvmlDeviceGetMigMode");
  sym(api_->driver, "nvmlSystemGetDriverVersion");
  if (!api_->init || !api_->by_index || !api_->power) {
    reason_ = fmt::format("{} lacks nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetPowerUsage", path);
    return;
  }
  if (int rc = api_->init(); rc != kSuccess) reason_ = fmt::format("nvmlInit failed: {}", error(rc));
}

Nvml::~Nvml() {
  if (handle_ && ok() && api_->shutdown) api_->shutdown();
  // The library stays loaded: a background thread of NVML may still be winding down.
}

Nvml& Nvml::instance() {
  static Nvml nvml;
  return nvml;
}

std::string Nvml::error(int code) const {
  const char* text = api_->error_string ? api_->error_string(code) : nullptr;
  return text ? fmt::format("{} (NVML error {})", text, code) : fmt::format("NVML error {}", code);
}

std::optional<Nvml::Device> Nvml::device(const std::string& pci_bus_id, unsigned index, std::string& why) const {
  if (!ok()) {
    why = reason_;
    return std::nullopt;
  }
  Device d = nullptr;
  int rc = !pci_bus_id.empty() && api_->by_pci ? api_->by_pci(pci_bus_id.c_str(), &d) : api_->by_index(index, &d);
  if (rc != kSuccess) {
    why = fmt::format("NVML has no device {}: {}", pci_bus_id.empty() ? std::to_string(index) : pci_bus_id, error(rc));
    return std::nullopt;
  }
  return d;
}

bool Nvml::has_energy_counter() const { return ok() && api_->energy; }

std::optional<double> Nvml::energy_mj(Device d) const {
  unsigned long long mj = 0;
  if (!api_->energy || api_->energy(d, &mj) != kSuccess) return std::nullopt;
  return static_cast<double>(mj);
}

std::optional<double> Nvml::power_w(Device d) const {
  unsigned mw = 0;
  if (api_->power(d, &mw) != kSuccess) return std::nullopt;
  return mw / 1000.0;
}

std::optional<double> Nvml::power_limit_w(Device d) const {
  unsigned mw = 0;
  if (!api_->power_limit || api_->power_limit(d, &mw) != kSuccess) return std::nullopt;
  return mw / 1000.0;
}

std::optional<double> Nvml::power_limit_default_w(Device d) const {
  unsigned mw = 0;
  if (!api_->power_limit_default || api_->power_limit_default(d, &mw) != kSuccess) return std::nullopt;
  return mw / 1000.0;
}

std::optional<unsigned> Nvml::clock_mhz(Device d, unsigned clock_type) const {
  unsigned mhz = 0;
  if (!api_->clock || api_->clock(d, clock_type, &mhz) != kSuccess) return std::nullopt;
  return mhz;
}

std::optional<unsigned> Nvml::temperature_c(Device d) const {
  unsigned c = 0;
  if (!api_->temperature || api_->temperature(d, 0 /* NVML_TEMPERATURE_GPU */, &c) != kSuccess) return std::nullopt;
  return c;
}

std::optional<unsigned long long> Nvml::clock_event_reasons(Device d) const {
  unsigned long long r = 0;
  if (!api_->reasons || api_->reasons(d, &r) != kSuccess) return std::nullopt;
  return r;
}

std::string clock_event_names(unsigned long long reasons) {
  static constexpr std::pair<unsigned long long, const char*> kNames[] = {
      {kClockEventIdle, "gpu_idle"},         {kClockEventAppClocks, "applications_clocks"},
      {kClockEventSwPowerCap, "sw_power_cap"}, {kClockEventHwSlowdown, "hw_slowdown"},
      {kClockEventSyncBoost, "sync_boost"},   {kClockEventSwThermal, "sw_thermal_slowdown"},
      {kClockEventHwThermal, "hw_thermal_slowdown"}, {kClockEventHwPowerBrake, "hw_power_brake"},
      {kClockEventDisplayClock, "display_clock"}};
  std::string out;
  for (auto& [bit, name] : kNames)
    if (reasons & bit) out.append(out.empty() ? "" : ",").append(name);  // piecewise: GCC 12's false -Wrestrict
  return out.empty() ? "none" : out;
}

std::optional<bool> Nvml::ecc_enabled(Device d) const {
  int current = 0, pending = 0;
  if (!api_->ecc || api_->ecc(d, &current, &pending) != kSuccess) return std::nullopt;
  return current == kEnableStateEnabled;
}

std::optional<bool> Nvml::mig_enabled(Device d) const {
  unsigned current = 0, pending = 0;
  if (!api_->mig || api_->mig(d, &current, &pending) != kSuccess) return std::nullopt;
  return current == 1;
}

std::string Nvml::driver_version() const {
  char text[96] = {};
  if (!ok() || !api_->driver || api_->driver(text, sizeof text) != kSuccess) return "";
  return text;
}

}  // namespace opmeter
