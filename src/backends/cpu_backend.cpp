// The host CPU: cases name `threads=N`; memory is what the OS says is available; samples are
// timed by the host's clock; energy is read from RAPL where the kernel lets us.
#include <fmt/format.h>

#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "sensors/rapl.hpp"

namespace opmeter {
namespace {

constexpr double kIdleWindowS = 0.5;

// The run's CPU energy facts: the RAPL domains, or why there are none, and the idle draw of the
// counted domains (`cpu_idle_power_w`, the domains results' avg_power_w covers).
nlohmann::json cpu_energy_context() {
  rapl::Discovery d = rapl::discover();
  if (!d.ok()) return {{"cpu_energy", {{"unavailable", d.reason}}}};
  nlohmann::json domains = nlohmann::json::array();
  for (auto& x : d.domains) domains.push_back({{"zone", x.zone}, {"name", x.name}, {"counted", x.counted()}});
  nlohmann::json energy = {{"source", "RAPL (powercap)"}, {"root", d.root}, {"domains", domains}};
  if (!d.notes.empty()) energy["notes"] = d.notes;
  nlohmann::json out = {{"cpu_energy", energy}};
  rapl::Meter meter(d.counted());
  std::string why;
  if (auto idle = meter.idle(kIdleWindowS, why)) {
    nlohmann::json by_domain;
    for (auto& [domain, j] : idle->joules) by_domain[domain] = j / idle->seconds;
    out["cpu_energy"]["idle_power_w"] = by_domain;
    out["cpu_energy"]["idle_window_s"] = idle->seconds;
    out["cpu_idle_power_w"] = idle->avg_watts();
  } else {
    out["cpu_energy"]["idle_unavailable"] = why;
  }
  return out;
}

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string device_grammar() const override { return "cpu"; }
  std::string description() const override { return "the CPU"; }
  bool owns(const std::string& device) const override { return device == kHostDevice; }
  std::string first_device() const override { return kHostDevice; }
  Support ready() override { return Support::yes(); }
  Support supports(const Case&) override { return Support::yes(); }
  double free_memory(const Case&) override { return static_cast<double>(available_memory_bytes()); }
  std::string ceiling_key(const Case& c) const override { return fmt::format("threads={}", c.threads); }
  std::unique_ptr<EnergyCounter> energy_counter(const Case&, std::string& why) override {
    return rapl::open_meter(why);
  }
  nlohmann::json context(const std::vector<std::string>&) override { return cpu_energy_context(); }
};

const BackendRegistrar reg(std::make_unique<CpuBackend>());

}  // namespace
}  // namespace opmeter
