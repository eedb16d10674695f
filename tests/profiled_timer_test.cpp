// run --profile's timer: the profiler's capture range holds the one profiled sample, whoever runs
// its calls (a graph replay, a worker); the device timer is told it runs under a profiler (no hold
// kernel, no flush), through a telemetry timer too; the range closes on a throw.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/profiled_timer.hpp"
#include "sensors/telemetry.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;

namespace {
using Log = std::vector<std::string>;

// A backend whose profiler range only writes to the log.
class RangeBackend final : public Backend {
 public:
  explicit RangeBackend(Log& log) : log_(log) {}
  std::string name() const override { return "range"; }
  std::string device_grammar() const override { return "range:N"; }
  std::string description() const override { return "logs its profiler range"; }
  bool owns(const std::string& device) const override { return device.rfind("range:", 0) == 0; }
  std::string first_device() const override { return "range:0"; }
  Support ready() override { return Support::yes(); }
  Support supports(const Case&) override { return Support::yes(); }
  double free_memory(const Case&) override { return 1e9; }
  void profiler_start() override { log_.push_back("start"); }
  void profiler_stop() override { log_.push_back("stop"); }

 private:
  Log& log_;
};

// Like a CUDA timer: enqueues a hold and a flush before the calls unless told it is profiled.
class DeviceLikeTimer final : public SampleTimer {
 public:
  explicit DeviceLikeTimer(Log& log) : log_(log) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    if (!profiled_) {
      log_.push_back("hold");
      log_.push_back("flush");
    }
    for (std::size_t i = 0; i < calls; ++i) call();
    log_.push_back("events");
    return 1e-3 * static_cast<double>(calls);
  }
  void under_profiler() override { profiled_ = true; }
  bool profiled() const { return profiled_; }

 private:
  Log& log_;
  bool profiled_ = false;
};
}  // namespace

TEST(ProfiledTimer, TheRangeHoldsTheSampleAndTheTimerEnqueuesNothingOfItsOwn) {
  Log log;
  RangeBackend backend(log);
  DeviceLikeTimer device(log);
  ProfiledTimer timer(device, backend);
  EXPECT_TRUE(device.profiled());
  auto t = timer.time(2, [&] { log.push_back("call"); });
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 2e-3);
  EXPECT_EQ(log, (Log{"start", "call", "call", "events", "stop"}));
  EXPECT_EQ(timer.fixed_batch(), 1u);
}

// A timer that runs the calls without `call` (a CUDA graph replay, a worker's own loop) is still
// inside the range.
TEST(ProfiledTimer, ATimerThatRunsTheCallsItselfIsInsideTheRange) {
  Log log;
  RangeBackend backend(log);
  class Replay final : public SampleTimer {
   public:
    explicit Replay(Log& log) : log_(log) {}
    std::optional<double> time(std::size_t, const std::function<void()>&) override {
      log_.push_back("graph launch");
      return 1e-3;
    }

   private:
    Log& log_;
  } replay(log);
  ProfiledTimer(replay, backend).time(1, [&] { log.push_back("call"); });
  EXPECT_EQ(log, (Log{"start", "graph launch", "stop"}));
}

TEST(ProfiledTimer, TheRangeClosesWhenACallThrows) {
  Log log;
  RangeBackend backend(log);
  DeviceLikeTimer device(log);
  ProfiledTimer timer(device, backend);
  EXPECT_THROW(timer.time(3, [&] {
    log.push_back("call");
    throw std::runtime_error("launch failed");
  }),
               std::runtime_error);
  EXPECT_EQ(log, (Log{"start", "call", "stop"}));
}

TEST(ProfiledTimer, ATelemetryTimerPassesTheHintOn) {
  Nvml nvml(FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.reason();
  std::string why;
  auto device = nvml.device("", 0, why);
  ASSERT_TRUE(device) << why;
  Telemetry telemetry(nvml, *device, 0.001);
  Log log;
  RangeBackend backend(log);
  DeviceLikeTimer inner(log);
  TelemetryTimer watched(inner, telemetry);
  ProfiledTimer timer(watched, backend);
  EXPECT_TRUE(inner.profiled());
}
