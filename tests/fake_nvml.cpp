// A scripted stand-in for libnvidia-ml.so.1, so the NVML accounting is tested without a GPU.
// Environment: FAKE_NVML_POWER_W (default 250), FAKE_NVML_PERIOD_MS (energy counter update
// period, default 50), FAKE_NVML_INIT_ERROR (nvmlInit_v2 returns this code). Built once more
// with FAKE_NVML_NO_ENERGY: an NVML without nvmlDeviceGetTotalEnergyConsumption. Read at each
// call, so a test can change them while a poller runs: FAKE_NVML_REASONS (clock event reasons,
// default 0), FAKE_NVML_SM_MHZ (default 1755), FAKE_NVML_TEMP_C (default 60), FAKE_NVML_CAP_W (the
// enforced power limit, default 700 W; the board's default is 700 W).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace {
using Clock = std::chrono::steady_clock;
Clock::time_point g_start;
double g_power_w = 250, g_period_s = 0.05;
int g_device = 0;  // the address is the handle

double env(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : fallback;
}
[[maybe_unused]] double elapsed_s() { return std::chrono::duration<double>(Clock::now() - g_start).count(); }
}  // namespace

extern "C" {
int nvmlInit_v2() {
  if (int e = static_cast<int>(env("FAKE_NVML_INIT_ERROR", 0)); e != 0) return e;
  g_start = Clock::now();
  g_power_w = env("FAKE_NVML_POWER_W", 250);
  g_period_s = env("FAKE_NVML_PERIOD_MS", 50) / 1000.0;
  return 0;
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int code) { return code == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &g_device;
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** device) {
  if (std::strcmp(bus, "00000000:01:00.0") != 0) return 6;  // NVML_ERROR_NOT_FOUND
  *device = &g_device;
  return 0;
}
#ifndef FAKE_NVML_NO_ENERGY
// The counter advances in steps, once per period, like the real one.
int nvmlDeviceGetTotalEnergyConsumption(void*, unsigned long long* mj) {
  double updated = std::floor(elapsed_s() / g_period_s) * g_period_s;
  *mj = static_cast<unsigned long long>(1e6 + g_power_w * updated * 1000.0);
  return 0;
}
#endif
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  *mw = static_cast<unsigned>(g_power_w * 1000);
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void*, unsigned* mw) {
  *mw = static_cast<unsigned>(env("FAKE_NVML_CAP_W", 700) * 1000);
  return 0;
}
int nvmlDeviceGetPowerManagementDefaultLimit(void*, unsigned* mw) {
  *mw = 700000;
  return 0;
}
int nvmlDeviceGetClockInfo(void*, unsigned type, unsigned* mhz) {
  *mhz = type == 1 ? static_cast<unsigned>(env("FAKE_NVML_SM_MHZ", 1755)) : 2619;
  return 0;
}
int nvmlDeviceGetTemperature(void*, unsigned, unsigned* c) {
  *c = static_cast<unsigned>(env("FAKE_NVML_TEMP_C", 60));
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void*, unsigned long long* reasons) {
  *reasons = static_cast<unsigned long long>(env("FAKE_NVML_REASONS", 0));
  return 0;
}
int nvmlSystemGetDriverVersion(char* text, unsigned len) {
  std::strncpy(text, "999.99-fake", len);
  return 0;
}
}
