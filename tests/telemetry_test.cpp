// GPU telemetry: the timeline's summaries, the steady-power test, thinning, and the sample filter
// that keeps power-capped samples and drops slowed-down ones (through the fake NVML library).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <thread>

#include "sensors/telemetry.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;

namespace {
TelemetryPoint at(double t, double mhz, double watts, unsigned long long reasons = 0, double temp = 60) {
  return {t, mhz, watts, temp, reasons};
}

// A timer whose every sample takes 1 ms per call.
class MsTimer : public SampleTimer {
 public:
  std::optional<double> time(std::size_t calls, const std::function<void()>&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let the poller see the state
    return 1e-3 * static_cast<double>(calls);
  }
};
}  // namespace

TEST(Telemetry, SummaryOfATimeline) {
  std::vector<TelemetryPoint> p = {at(0, 1980, 300), at(1, 1755, 690, kClockEventSwPowerCap, 70),
                                   at(2, 1500, 700, kClockEventSwPowerCap, 75), at(3, 1980, 120, kClockEventIdle, 65)};
  auto s = summarize_telemetry(p);
  EXPECT_EQ(s.points, 4u);
  EXPECT_DOUBLE_EQ(s.sm_mhz_min, 1500);
  EXPECT_DOUBLE_EQ(s.sm_mhz_median, (1755 + 1980) / 2.0);
  EXPECT_DOUBLE_EQ(s.temp_c_max, 75);
  EXPECT_DOUBLE_EQ(s.power_capped_fraction, 0.5);
  EXPECT_DOUBLE_EQ(s.capped_sm_mhz_median, (1755 + 1500) / 2.0);
  EXPECT_EQ(s.reasons_seen, kClockEventSwPowerCap | kClockEventIdle);
  EXPECT_EQ(summarize_telemetry({}).points, 0u);
}

TEST(Telemetry, ReasonNames) {
  EXPECT_EQ(clock_event_names(0), "none");
  EXPECT_EQ(clock_event_names(kClockEventSwPowerCap | kClockEventHwThermal), "sw_power_cap,hw_thermal_slowdown");
  EXPECT_TRUE(kSlowdownReasons & kClockEventSwThermal);
  EXPECT_FALSE(kSlowdownReasons & kClockEventSwPowerCap);  // the power cap is a steady state, not a fault
}

TEST(Telemetry, PowerIsSteadyWhenTwoWindowsAgree) {
  std::vector<TelemetryPoint> rising, flat;
  for (int i = 0; i <= 50; ++i) {
    rising.push_back(at(i * 0.01, 1980, 300 + 8.0 * i));  // +8 W per 10 ms
    flat.push_back(at(i * 0.01, 1755, 695 + (i % 2 ? 5 : -5)));
  }
  EXPECT_FALSE(power_steady(rising));
  EXPECT_TRUE(power_steady(flat));
  std::vector<TelemetryPoint> short_flat(flat.begin(), flat.begin() + 40);  // < two 0.25 s windows
  EXPECT_FALSE(power_steady(short_flat));
  EXPECT_FALSE(power_steady({}));
}

TEST(Telemetry, TimelineIsThinnedButKeepsItsEnds) {
  std::vector<TelemetryPoint> p;
  for (int i = 0; i < 1000; ++i) p.push_back(at(10 + i * 0.01, 1980, 500, i == 999 ? kClockEventSwPowerCap : 0));
  auto j = telemetry_json(p, 10, 200);
  ASSERT_LE(j["t_s"].size(), 201u);
  EXPECT_GE(j["t_s"].size(), 199u);
  EXPECT_DOUBLE_EQ(j["t_s"][0].get<double>(), 0.0);
  EXPECT_NEAR(j["t_s"].back().get<double>(), 9.99, 1e-9);
  EXPECT_EQ(j["reasons"].back().get<unsigned long long>(), kClockEventSwPowerCap);
  EXPECT_EQ(j["sm_mhz"].size(), j["t_s"].size());
  EXPECT_EQ(telemetry_json(p, 10, 5000)["t_s"].size(), 1000u);
}

TEST(Telemetry, PowerCappedSamplesAreKeptSlowedOnesDiscarded) {
  Nvml nvml(FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.reason();
  std::string why;
  auto device = nvml.device("", 0, why);
  ASSERT_TRUE(device) << why;
  EXPECT_EQ(nvml.temperature_c(*device), 60u);
  Telemetry telemetry(nvml, *device, 0.001);
  MsTimer inner;
  TelemetryTimer timer(inner, telemetry);
  auto call = [] {};

  setenv("FAKE_NVML_REASONS", "4", 1);  // software power cap
  telemetry.start();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(timer.time(1, call).has_value());
  EXPECT_EQ(timer.power_capped_samples(), 5u);
  EXPECT_EQ(timer.slowed_samples(), 0u);

  setenv("FAKE_NVML_REASONS", "36", 1);  // power cap + software thermal slowdown
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(timer.time(1, call).has_value());
  EXPECT_EQ(timer.slowed_samples(), 1u);
  EXPECT_EQ(timer.slowdown_reasons(), kClockEventSwThermal);

  setenv("FAKE_NVML_REASONS", "0", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(timer.time(1, call).has_value());
  auto points = telemetry.stop();
  unsetenv("FAKE_NVML_REASONS");
  ASSERT_GE(points.size(), 5u);
  auto s = summarize_telemetry(points);
  EXPECT_EQ(s.reasons_seen, kClockEventSwPowerCap | kClockEventSwThermal);
  EXPECT_DOUBLE_EQ(s.sm_mhz_median, 1755);
}

TEST(Telemetry, WindowEnergyUsesOnlyTheReadingsInsideTheWindow) {
  // A counter stepping every 50 ms at 700 W inside [1, 2], and idle readings around it.
  std::vector<TelemetryPoint> p;
  for (int i = 0; i <= 300; ++i) {
    double t = 0.01 * i;
    bool busy = t >= 1.0 && t <= 2.0;
    TelemetryPoint x = at(t, 1500, busy ? 700 : 80);
    x.energy_mj = 1e6 + 700.0 * std::floor(std::min(std::max(t, 1.0), 2.0) / 0.05) * 0.05 * 1000;
    p.push_back(x);
  }
  std::string why;
  auto e = window_energy(p, 1.0, 2.0, why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->method, "energy counter");
  EXPECT_NEAR(e->avg_watts(), 700.0, 7.0);
  for (auto& x : p) x.energy_mj = -1;  // no counter: the power readings of the window
  e = window_energy(p, 1.0, 2.0, why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->method, "power samples");
  EXPECT_NEAR(e->avg_watts(), 700.0, 1e-9);
  EXPECT_FALSE(window_energy(p, 5.0, 6.0, why));  // nothing read in the window
  EXPECT_NE(why.find("no energy or power readings"), std::string::npos);
}
