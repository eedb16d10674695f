#include "sensors/telemetry.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "opmeter/stats.hpp"

namespace opmeter {
namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Mean power of the readings with t in [from, to).
std::optional<double> mean_power(const std::vector<TelemetryPoint>& points, double from, double to) {
  double sum = 0;
  std::size_t n = 0;
  for (auto& p : points)
    if (p.t_s >= from && p.t_s < to && p.power_w > 0) {
      sum += p.power_w;
      ++n;
    }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}
}  // namespace

TelemetrySummary summarize_telemetry(const std::vector<TelemetryPoint>& points) {
  TelemetrySummary s;
  s.points = points.size();
  std::vector<double> clocks, capped_clocks, power;
  std::size_t capped = 0;
  for (auto& p : points) {
    s.reasons_seen |= p.reasons;
    if (p.sm_mhz > 0) clocks.push_back(p.sm_mhz);
    if (p.power_w > 0) power.push_back(p.power_w);
    s.temp_c_max = std::max(s.temp_c_max, p.temp_c);
    if (p.reasons & kClockEventSwPowerCap) {
      ++capped;
      if (p.sm_mhz > 0) capped_clocks.push_back(p.sm_mhz);
    }
  }
  if (!clocks.empty()) {
    s.sm_mhz_median = median(clocks);
    s.sm_mhz_min = *std::min_element(clocks.begin(), clocks.end());
  }
  if (!power.empty()) s.power_w_median = median(power);
  if (!capped_clocks.empty()) s.capped_sm_mhz_median = median(capped_clocks);
  if (!points.empty()) s.power_capped_fraction = static_cast<double>(capped) / static_cast<double>(points.size());
  return s;
}

bool power_steady(const std::vector<TelemetryPoint>& points, double window_s, double tolerance) {
  if (points.empty()) return false;
  double end = points.back().t_s;
  if (end - points.front().t_s < 2 * window_s) return false;
  auto last = mean_power(points, end - window_s, end + 1);
  auto before = mean_power(points, end - 2 * window_s, end - window_s);
  if (!last || !before) return false;
  return std::abs(*last - *before) <= tolerance * *before;
}

nlohmann::json telemetry_json(const std::vector<TelemetryPoint>& points, double t0, std::size_t max_points) {
  nlohmann::json j = {{"t_s", nlohmann::json::array()}, {"sm_mhz", nlohmann::json::array()},
                      {"power_w", nlohmann::json::array()}, {"temp_c", nlohmann::json::array()},
                      {"reasons", nlohmann::json::array()}};
  if (points.empty() || max_points == 0) return j;
  const std::size_t step = (points.size() + max_points - 1) / max_points;
  auto put = [&](const TelemetryPoint& p) {
    j["t_s"].push_back(std::round((p.t_s - t0) * 1e4) / 1e4);
    j["sm_mhz"].push_back(p.sm_mhz);
    j["power_w"].push_back(std::round(p.power_w * 10) / 10);
    j["temp_c"].push_back(p.temp_c);
    j["reasons"].push_back(p.reasons);
  };
  for (std::size_t i = 0; i < points.size(); i += step) put(points[i]);
  if ((points.size() - 1) % step != 0) put(points.back());
  return j;
}

std::optional<EnergyReading> window_energy(const std::vector<TelemetryPoint>& points, double t_begin, double t_end,
                                           std::string& why) {
  std::vector<CounterRead> counter;
  std::vector<PowerRead> power;
  for (auto& p : points) {
    if (p.t_s < t_begin || p.t_s > t_end) continue;
    if (p.energy_mj >= 0) counter.push_back({p.t_s, p.energy_mj});
    if (p.power_w > 0) power.push_back({p.t_s, p.power_w});
  }
  const double window = t_end - t_begin;
  if (auto j = counter_energy_j(counter, t_begin, t_end)) return EnergyReading{*j, window, "energy counter"};
  if (auto j = integrate_power_j(power, t_begin, t_end)) return EnergyReading{*j, window, "power samples"};
  why = "NVML returned no energy or power readings for this device";
  return std::nullopt;
}

Telemetry::Telemetry(const Nvml& nvml, Nvml::Device device, double period_s)
    : nvml_(nvml), device_(device), period_s_(period_s) {}

Telemetry::~Telemetry() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

void Telemetry::poll_once() {
  TelemetryPoint p;
  p.t_s = now_s();
  if (auto v = nvml_.clock_mhz(device_, 1)) p.sm_mhz = *v;
  if (auto v = nvml_.power_w(device_)) p.power_w = *v;
  if (auto v = nvml_.temperature_c(device_)) p.temp_c = *v;
  if (auto v = nvml_.clock_event_reasons(device_)) p.reasons = *v;
  if (auto v = nvml_.energy_mj(device_)) p.energy_mj = *v;
  latest_.store(p.reasons);
  during_.fetch_or(p.reasons);
  std::lock_guard lock(mutex_);
  points_.push_back(p);
}

void Telemetry::start() {
  {
    std::lock_guard lock(mutex_);
    points_.clear();
  }
  poll_once();  // the state at the start is known before the first sample
  running_ = true;
  thread_ = std::thread([this] {
    while (running_.load()) {
      std::this_thread::sleep_for(std::chrono::duration<double>(period_s_));
      poll_once();
    }
  });
}

std::vector<TelemetryPoint> Telemetry::stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  return snapshot();
}

std::vector<TelemetryPoint> Telemetry::snapshot() const {
  std::lock_guard lock(mutex_);
  return points_;
}

void Telemetry::begin_sample() { during_.store(latest_.load()); }

unsigned long long Telemetry::end_sample() { return during_.load() | latest_.load(); }

void EnergyMeter::start() {
  t_begin_ = now_s();
  telemetry_.start();
}

std::optional<EnergyReading> EnergyMeter::stop(std::string& why) {
  double t_end = now_s();
  return window_energy(telemetry_.stop(), t_begin_, t_end, why);
}

std::optional<double> EnergyMeter::idle_power_w(double seconds) {
  start();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  std::string why;
  auto r = stop(why);
  if (!r) return std::nullopt;
  return r->avg_watts();
}

std::optional<double> TelemetryTimer::time(std::size_t calls, const std::function<void()>& call) {
  telemetry_.begin_sample();
  auto t = inner_.time(calls, call);
  unsigned long long reasons = telemetry_.end_sample();
  if (!t) return t;
  if (reasons & kSlowdownReasons) {
    ++slowed_;
    slowdown_reasons_ |= reasons & kSlowdownReasons;
    return std::nullopt;
  }
  if (reasons & kClockEventSwPowerCap) ++capped_;
  return t;
}

}  // namespace opmeter
