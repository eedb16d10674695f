#pragma once
// What a GPU does while a case runs: SM clock, power, temperature and NVML's clock event reasons,
// polled by a thread through the case (a timeline in the results), and the sample filter that
// drops samples the GPU slowed down by heat or hardware protection.
#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/engine.hpp"
#include "opmeter/sensor.hpp"

namespace opmeter {

struct TelemetryPoint {
  double t_s = 0;  // steady_clock seconds
  double sm_mhz = 0, power_w = 0, temp_c = 0;  // 0: not readable
  unsigned long long reasons = 0;              // kClockEvent* bits
  double energy_mj = -1;                       // the total-energy counter; < 0: not readable
};

// --- Pure functions of a timeline (unit-tested) --------------------------------------------------

struct TelemetrySummary {
  std::size_t points = 0;
  double sm_mhz_median = 0, sm_mhz_min = 0, power_w_median = 0, temp_c_max = 0;
  double power_capped_fraction = 0;  // of points with the software power cap in force
  double capped_sm_mhz_median = 0;   // SM clock while power-capped (0: never)
  unsigned long long reasons_seen = 0;
};
TelemetrySummary summarize_telemetry(const std::vector<TelemetryPoint>& points);

// Whether power has settled: the mean of the last `window_s` differs from the mean of the window
// before it by at most `tolerance` (relative). False until two windows of readings exist.
bool power_steady(const std::vector<TelemetryPoint>& points, double window_s = 0.25, double tolerance = 0.03);

// Columns {t_s (from t0), sm_mhz, power_w, temp_c, reasons}, thinned to at most `max_points`
// evenly spaced readings (the last one always kept).
nlohmann::json telemetry_json(const std::vector<TelemetryPoint>& points, double t0, std::size_t max_points = 200);

// Energy over [t_begin, t_end] from the readings taken in it: the energy counter's rate between
// its first and last step when it stepped often enough (counter_energy_j), else the power
// readings integrated (integrate_power_j). Empty, with `why`, when neither was readable.
std::optional<EnergyReading> window_energy(const std::vector<TelemetryPoint>& points, double t_begin, double t_end,
                                           std::string& why);

// --- The poller ----------------------------------------------------------------------------------

class Telemetry {
 public:
  Telemetry(const Nvml& nvml, Nvml::Device device, double period_s = 0.01);
  ~Telemetry();
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  void start();
  std::vector<TelemetryPoint> stop();
  std::vector<TelemetryPoint> snapshot() const;

  // The reasons in force during a sample: those at its start, any polled during it, and those at
  // its end. Call begin_sample() right before the sample and end_sample() right after it.
  void begin_sample();
  unsigned long long end_sample();

 private:
  void poll_once();
  const Nvml& nvml_;
  Nvml::Device device_;
  double period_s_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<TelemetryPoint> points_;
  std::atomic<unsigned long long> latest_{0}, during_{0};
};

// Energy of one device over a window, from a Telemetry poller of its own: start(), the work,
// stop(). (A case that already polls its GPU takes window_energy() of that timeline instead.)
class EnergyMeter {
 public:
  EnergyMeter(const Nvml& nvml, Nvml::Device device, double poll_s = 0.005) : telemetry_(nvml, device, poll_s) {}
  void start();
  // Empty, with `why`, when neither the counter nor power could be read.
  std::optional<EnergyReading> stop(std::string& why);
  // Average power over `seconds` of doing nothing.
  std::optional<double> idle_power_w(double seconds = 0.5);

 private:
  Telemetry telemetry_;
  double t_begin_ = 0;
};

// Wraps a device's sample timer: a sample taken under a slowdown reason (kSlowdownReasons) is
// discarded; one under the software power cap is kept and counted.
class TelemetryTimer : public SampleTimer {
 public:
  TelemetryTimer(SampleTimer& inner, Telemetry& telemetry) : inner_(inner), telemetry_(telemetry) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override;
  std::size_t fixed_batch() const override { return inner_.fixed_batch(); }
  std::optional<double> last_call_seconds() const override { return inner_.last_call_seconds(); }
  bool any(bool yes) override { return inner_.any(yes); }
  double largest(double value) override { return inner_.largest(value); }
  std::map<std::string, std::string> details() const override { return inner_.details(); }
  void under_profiler() override { inner_.under_profiler(); }

  std::size_t slowed_samples() const { return slowed_; }         // discarded
  std::size_t power_capped_samples() const { return capped_; }   // kept
  unsigned long long slowdown_reasons() const { return slowdown_reasons_; }

 private:
  SampleTimer& inner_;
  Telemetry& telemetry_;
  std::size_t slowed_ = 0, capped_ = 0;
  unsigned long long slowdown_reasons_ = 0;
};

}  // namespace opmeter
