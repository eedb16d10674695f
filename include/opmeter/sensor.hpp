#pragma once
// Energy and power around a window of work, from NVML (loaded with dlopen: no NVIDIA library is
// needed to build or start opmeter). The poller that reads it is in telemetry.hpp.
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace opmeter {

// --- Pure accounting (unit-tested with synthetic readings) ---------------------------------------

// A polled reading of a cumulative energy counter (millijoules) at time t (seconds).
struct CounterRead {
  double t_s;
  double mj;
};
// A polled power reading (watts) at time t (seconds).
struct PowerRead {
  double t_s;
  double watts;
};

// Energy over [t_begin, t_end] from a counter that advances in steps. The first and the last
// observed step bound an interval whose energy is known exactly; its average power is scaled to
// the window. Empty when the counter stepped fewer than `min_updates` times (too coarse).
inline constexpr std::size_t kMinCounterUpdates = 3;
std::optional<double> counter_energy_j(const std::vector<CounterRead>& reads, double t_begin, double t_end,
                                       std::size_t min_updates = kMinCounterUpdates);
// Energy over [t_begin, t_end] by the trapezoid rule over power samples, each end held at the
// nearest sample. Empty without samples.
std::optional<double> integrate_power_j(const std::vector<PowerRead>& reads, double t_begin, double t_end);

// --- NVML ----------------------------------------------------------------------------------------

// NVML's clock event reasons (nvmlClocksEventReason*), as a bit mask.
inline constexpr unsigned long long kClockEventIdle = 0x1, kClockEventAppClocks = 0x2, kClockEventSwPowerCap = 0x4,
                                    kClockEventHwSlowdown = 0x8, kClockEventSyncBoost = 0x10,
                                    kClockEventSwThermal = 0x20, kClockEventHwThermal = 0x40,
                                    kClockEventHwPowerBrake = 0x80, kClockEventDisplayClock = 0x100;
// Reasons that mean the GPU slowed itself down (heat, hardware protection): samples taken under
// them are discarded. The software power cap is the GPU's normal steady state and is kept.
inline constexpr unsigned long long kSlowdownReasons =
    kClockEventHwSlowdown | kClockEventSwThermal | kClockEventHwThermal | kClockEventHwPowerBrake;
// "sw_power_cap,hw_slowdown" for a mask; "none" for 0.
std::string clock_event_names(unsigned long long reasons);

struct EnergyReading {
  double joules = 0;
  double seconds = 0;
  std::string method;  // "energy counter" or "power samples"
  double avg_watts() const { return seconds > 0 ? joules / seconds : 0; }
};

// The few NVML functions opmeter uses, declared here and resolved with dlsym.
class Nvml {
 public:
  // Loads `library` (default: $OPMETER_NVML_LIBRARY, else libnvidia-ml.so.1) and initializes it.
  explicit Nvml(const std::string& library = "");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  static Nvml& instance();  // process-wide, loaded on first use

  bool ok() const { return reason_.empty(); }
  const std::string& reason() const { return reason_; }  // why NVML cannot be used

  using Device = void*;
  // By PCI bus id ("0000:65:00.0") when given, else by NVML index. Empty with `why` set.
  std::optional<Device> device(const std::string& pci_bus_id, unsigned index, std::string& why) const;
  bool has_energy_counter() const;
  std::optional<double> energy_mj(Device d) const;
  std::optional<double> power_w(Device d) const;
  std::optional<double> power_limit_w(Device d) const;          // enforced now (an administrator's cap)
  std::optional<double> power_limit_default_w(Device d) const;  // the board's default
  std::optional<unsigned> clock_mhz(Device d, unsigned clock_type) const;  // 1: SM, 2: memory
  std::optional<unsigned> temperature_c(Device d) const;                    // the GPU die
  // Why the clocks are below their maximum now: a bit mask of the kClockEvent* reasons.
  std::optional<unsigned long long> clock_event_reasons(Device d) const;
  std::optional<bool> ecc_enabled(Device d) const;
  std::optional<bool> mig_enabled(Device d) const;
  std::string driver_version() const;

 private:
  struct Api;
  std::string error(int code) const;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  std::string reason_;
};

}  // namespace opmeter
