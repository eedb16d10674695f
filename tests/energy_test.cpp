// Energy accounting: pure functions on synthetic readings, and the NVML path through fake NVML
// libraries (tests/fake_nvml.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "opmeter/result.hpp"
#include "opmeter/sensor.hpp"
#include "sensors/telemetry.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;

namespace {
// A counter stepping every `period` s at `watts`, polled every `poll` s over [0, window].
std::vector<CounterRead> stepped_counter(double watts, double period, double poll, double window) {
  std::vector<CounterRead> reads;
  for (double t = 0; t <= window + 1e-12; t += poll) reads.push_back({t, 5000 + watts * 1000 * std::floor(t / period) * period});
  return reads;
}
}  // namespace

TEST(EnergyAccounting, CounterStepsGiveTheAveragePowerTimesTheWindow) {
  for (double period : {0.02, 0.05, 0.1}) {
    auto reads = stepped_counter(300, period, 0.005, 1.0);
    auto j = counter_energy_j(reads, 0, 1.0);
    ASSERT_TRUE(j) << period;
    EXPECT_NEAR(*j, 300.0, 300.0 * 0.02) << "period " << period;
  }
}

TEST(EnergyAccounting, TooFewCounterUpdatesAreNotTrusted) {
  auto reads = stepped_counter(300, 0.1, 0.005, 0.25);  // two steps in the window
  EXPECT_FALSE(counter_energy_j(reads, 0, 0.25));
  EXPECT_TRUE(counter_energy_j(reads, 0, 0.25, 2));
}

TEST(EnergyAccounting, ACounterThatGoesBackwardsIsRejected) {
  auto reads = stepped_counter(300, 0.02, 0.005, 1.0);
  reads[100].mj = 0;
  EXPECT_FALSE(counter_energy_j(reads, 0, 1.0));
}

TEST(EnergyAccounting, PowerIsIntegratedByTrapezoidsWithEndsHeld) {
  std::vector<PowerRead> flat = {{0.1, 200}, {0.5, 200}, {0.9, 200}};
  EXPECT_DOUBLE_EQ(*integrate_power_j(flat, 0, 1), 200.0);
  std::vector<PowerRead> ramp = {{0, 100}, {1, 300}};  // linear: mean 200 W
  EXPECT_DOUBLE_EQ(*integrate_power_j(ramp, 0, 1), 200.0);
  EXPECT_DOUBLE_EQ(*integrate_power_j(ramp, 0.5, 1), 0.5 * (200 + 300) / 2);
  std::vector<PowerRead> one = {{0.2, 150}};
  EXPECT_DOUBLE_EQ(*integrate_power_j(one, 0, 2), 300.0);
  EXPECT_FALSE(integrate_power_j({}, 0, 1));
  EXPECT_FALSE(integrate_power_j(flat, 1, 1));
}

TEST(Nvml, MissingLibraryIsAReasonNotACrash) {
  Nvml nvml("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(nvml.ok());
  EXPECT_NE(nvml.reason().find("does not load"), std::string::npos) << nvml.reason();
  std::string why;
  EXPECT_FALSE(nvml.device("", 0, why));
  EXPECT_EQ(why, nvml.reason());
}

TEST(Nvml, InitErrorIsReportedWithNvmlsText) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  Nvml nvml(FAKE_NVML);
  unsetenv("FAKE_NVML_INIT_ERROR");
  EXPECT_FALSE(nvml.ok());
  EXPECT_NE(nvml.reason().find("nvmlInit failed: Driver Not Loaded (NVML error 9)"), std::string::npos) << nvml.reason();
}

TEST(Nvml, DevicesAreFoundByPciBusIdOrIndex) {
  Nvml nvml(FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.reason();
  std::string why;
  EXPECT_TRUE(nvml.device("00000000:01:00.0", 7, why));
  EXPECT_TRUE(nvml.device("", 0, why));
  EXPECT_FALSE(nvml.device("00000000:02:00.0", 0, why));
  EXPECT_NE(why.find("NVML has no device 00000000:02:00.0"), std::string::npos) << why;
  EXPECT_EQ(nvml.driver_version(), "999.99-fake");
  EXPECT_EQ(nvml.power_limit_w(*nvml.device("", 0, why)), 700.0);
}

TEST(Nvml, EnergyCounterOverAWindowOfSeveralUpdates) {
  setenv("FAKE_NVML_POWER_W", "250", 1);
  setenv("FAKE_NVML_PERIOD_MS", "20", 1);
  Nvml nvml(FAKE_NVML);
  ASSERT_TRUE(nvml.has_energy_counter());
  std::string why;
  EnergyMeter meter(nvml, *nvml.device("", 0, why));
  meter.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto r = meter.stop(why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->method, "energy counter");
  EXPECT_NEAR(r->avg_watts(), 250.0, 250.0 * 0.1);
  EXPECT_NEAR(r->joules, 250.0 * r->seconds, 250.0 * r->seconds * 0.1);
}

TEST(Nvml, ShortWindowFallsBackToPowerSamples) {
  setenv("FAKE_NVML_POWER_W", "120", 1);
  setenv("FAKE_NVML_PERIOD_MS", "100", 1);
  Nvml nvml(FAKE_NVML);
  std::string why;
  EnergyMeter meter(nvml, *nvml.device("", 0, why));
  meter.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // at most two counter steps
  auto r = meter.stop(why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->method, "power samples");
  EXPECT_NEAR(r->avg_watts(), 120.0, 1e-9);
}

TEST(Nvml, WithoutTheEnergyFunctionPowerIsIntegrated) {
  setenv("FAKE_NVML_POWER_W", "300", 1);
  setenv("FAKE_NVML_PERIOD_MS", "20", 1);
  Nvml nvml(FAKE_NVML_NOENERGY);
  ASSERT_TRUE(nvml.ok()) << nvml.reason();
  EXPECT_FALSE(nvml.has_energy_counter());
  std::string why;
  EnergyMeter meter(nvml, *nvml.device("", 0, why));
  auto idle = meter.idle_power_w(0.1);
  ASSERT_TRUE(idle);
  EXPECT_NEAR(*idle, 300.0, 1e-9);
}

TEST(PerWatt, EnergyPerCallGivesWorkPerJoule) {
  Result r;
  r.status = Status::ok;
  r.work = {2e12, 1e6, 1e6};  // compute bound
  r.gflops = 500000;
  r.energy_j = 4.0;         // J per call
  r.avg_power_w = 600;
  auto w = per_watt(r);
  ASSERT_TRUE(w);
  EXPECT_STREQ(w->unit, "GFLOP/s/W");
  EXPECT_DOUBLE_EQ(w->value, 2e12 / 4.0 / 1e9);  // 500 GFLOP/J = 0.5 TFLOPS/W
  r.work = {0, 1e9, 1e9};
  w = per_watt(r);
  ASSERT_TRUE(w);
  EXPECT_STREQ(w->unit, "GB/s/W");
  EXPECT_DOUBLE_EQ(w->value, 2e9 / 4.0 / 1e9);
  r.energy_j.reset();
  r.avg_power_w.reset();
  EXPECT_FALSE(per_watt(r));  // unknown energy is empty, never zero
}

// Power without energy per call (a record with only the window's average power): work per joule
// is then the rate over the power, GFLOP/s / W or GB/s / W.
TEST(PerWatt, AveragePowerAloneGivesTheRateOverThePower) {
  Result r;
  r.status = Status::ok;
  r.work = {2e12, 1e6, 1e6};
  r.gflops = 500000;  // 2e12 flops in 4 ms
  r.gbps = 0.5;
  r.intensity = 1e6;  // compute bound
  r.avg_power_w = 500;
  auto w = per_watt(r);
  ASSERT_TRUE(w);
  EXPECT_STREQ(w->unit, "GFLOP/s/W");
  EXPECT_DOUBLE_EQ(w->value, 500000.0 / 500);  // 1000 GFLOP/J
  r.work = {0, 1e9, 1e9};                      // memory bound: 2e9 B in 4 ms
  r.gflops = 0;
  r.gbps = 500;
  r.intensity = 0;
  w = per_watt(r);
  ASSERT_TRUE(w);
  EXPECT_STREQ(w->unit, "GB/s/W");
  EXPECT_DOUBLE_EQ(w->value, 500.0 / 500);
}
