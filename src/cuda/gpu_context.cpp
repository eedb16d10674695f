// GPU facts for the results' context, and NVML handles matched to CUDA devices.
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "sensors/telemetry.hpp"

namespace opmeter::cuda {
namespace {
constexpr unsigned kClockSm = 1, kClockMem = 2;

std::string pci_bus_id(int index) {
  static std::mutex mutex;
  static std::map<int, std::string> ids;
  std::lock_guard lock(mutex);
  if (auto it = ids.find(index); it != ids.end()) return it->second;
  std::string id;
  if (Plugin* p = plugin(); p && p->device(index).ok) id = p->device_context(index).value("pci_bus_id", "");
  return ids[index] = id;
}
}  // namespace

std::optional<Nvml::Device> nvml_device(int index, std::string& why) {
  auto& nvml = Nvml::instance();
  if (!nvml.ok()) {
    why = nvml.reason();
    return std::nullopt;
  }
  return nvml.device(pci_bus_id(index), static_cast<unsigned>(index), why);
}

nlohmann::json gpu_context(const std::vector<int>& indices) {
  nlohmann::json out = {{"gpus", nlohmann::json::array()}};
  Plugin* p = plugin();
  if (!p) {
    out["cuda"] = {{"unavailable", load_reason()}};
    return out;
  }
  out["cuda"] = p->versions();
  auto& nvml = Nvml::instance();
  out["cuda"]["nvml_driver"] = nvml.ok() ? nlohmann::json(nvml.driver_version()) : nlohmann::json(nullptr);
  for (int index : indices) {
    auto device = fmt::format("cuda:{}", index);
    if (auto s = p->device(index); !s.ok) {
      out["gpus"].push_back({{"device", device}, {"unavailable", s.reason}});
      continue;
    }
    nlohmann::json g = p->device_context(index);
    g["device"] = device;
    std::string why;
    if (auto d = nvml_device(index, why)) {
      auto put = [&](const char* key, auto value) {
        if (value) g[key] = *value;
      };
      put("power_limit_w", nvml.power_limit_w(*d));
      put("power_limit_default_w", nvml.power_limit_default_w(*d));  // the fleet view's identical hardware
      put("sm_clock_now_mhz", nvml.clock_mhz(*d, kClockSm));
      put("mem_clock_now_mhz", nvml.clock_mhz(*d, kClockMem));
      put("ecc_enabled", nvml.ecc_enabled(*d));
      put("mig_enabled", nvml.mig_enabled(*d));
      g["energy_counter"] = nvml.has_energy_counter();
      EnergyMeter meter(nvml, *d);
      put("idle_power_w", meter.idle_power_w());
    } else {
      g["nvml"] = why;
    }
    out["gpus"].push_back(g);
  }
  return out;
}

}  // namespace opmeter::cuda
