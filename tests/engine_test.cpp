#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "opmeter/engine.hpp"
#include "opmeter/runner.hpp"

using namespace opmeter;

TEST(Stopping, ConvergesOnlyAfterMinimumCountTimeAndNoise) {
  Stopping s;  // 0.5%, 10 samples, 0.5 s, 15 s
  EXPECT_FALSE(should_stop(9, 0.001, 1.0, 1.0, s));     // too few samples
  EXPECT_FALSE(should_stop(10, 0.001, 0.4, 1.0, s));    // too little measured time
  EXPECT_FALSE(should_stop(10, 0.006, 1.0, 1.0, s));    // too noisy
  EXPECT_EQ(should_stop(10, 0.005, 0.5, 1.0, s), StopReason::converged);
}

TEST(Stopping, TimesOutWhenNoiseTargetIsNotReached) {
  Stopping s;
  EXPECT_FALSE(should_stop(500, 0.02, 14, 14.9, s));
  EXPECT_EQ(should_stop(500, 0.02, 14, 15.0, s), StopReason::timeout);
  EXPECT_FALSE(should_stop(1, 0.0, 20, 20, s));  // a single sample is not a result yet
}

TEST(Stopping, FixedCountIgnoresNoise) {
  Stopping s;
  s.fixed_samples = 20;
  EXPECT_FALSE(should_stop(19, 0.9, 100, 100, s));
  EXPECT_EQ(should_stop(20, 0.9, 0.001, 0.001, s), StopReason::fixed_count);
}

TEST(Stopping, SyntheticStreams) {
  // A steady stream converges at the first sample that meets every minimum; a noisy one never.
  Stopping s;
  s.min_time_s = 0.05;
  RunningStats steady, noisy;
  std::optional<StopReason> r1, r2;
  std::size_t stopped_at = 0;
  for (int i = 0; i < 1000 && !r1; ++i) {
    steady.add(0.01 * (1 + 0.001 * (i % 3)));
    r1 = should_stop(steady.count(), steady.rel_noise(), 0.01 * steady.count(), 0.01 * steady.count(), s);
    stopped_at = steady.count();
  }
  EXPECT_EQ(r1, StopReason::converged);
  EXPECT_EQ(stopped_at, 10u);
  for (int i = 0; i < 2000 && !r2; ++i) {
    noisy.add(i % 2 ? 0.01 : 0.02);
    r2 = should_stop(noisy.count(), noisy.rel_noise(), 0.015 * noisy.count(), 0.015 * noisy.count(), s);
  }
  EXPECT_EQ(r2, StopReason::timeout);
  EXPECT_NEAR(static_cast<double>(noisy.count()), 1000.0, 1.0);  // 15 s / 0.015 s
}

TEST(Batching, KeepsTimerOverheadBelowOnePercent) {
  EXPECT_EQ(batch_size(1e-3, 1e-3, 25e-9), 1u);
  EXPECT_EQ(batch_size(2e-3, 1e-3, 25e-9), 1u);
  EXPECT_NEAR(static_cast<double>(batch_size(1e-6, 1e-3, 25e-9)), 1000.0, 1.0);
  // Tiny target: the timer's overhead decides (100 x 50 ns = 5 us -> 50 calls of 100 ns).
  EXPECT_NEAR(static_cast<double>(batch_size(100e-9, 1e-9, 50e-9)), 50.0, 1.0);
  EXPECT_EQ(batch_size(0, 1e-3, 25e-9), 1u);
}

TEST(ColdCopies, EnoughToExceedTwiceTheCacheWithinBudget) {
  EXPECT_EQ(cold_copies(1 << 20, 32 << 20, 1e12), 64u);
  EXPECT_EQ(cold_copies(100 << 20, 32 << 20, 1e12), 1u);  // larger than the cache already
  EXPECT_EQ(cold_copies(1 << 20, 32 << 20, 10 << 20), 10u);  // memory budget
  EXPECT_EQ(cold_copies(0, 32 << 20, 1e12), 1u);
  EXPECT_EQ(cold_copies(1024, 1u << 30, 1e15), 256u);  // capped
}

namespace {
// Counts calls and which input set each used.
class CountingImpl : public Impl {
 public:
  void setup(const Case&, const SetupOptions&) override {}
  void run(std::size_t copy) override {
    ++calls;
    copies_seen.insert(copy);
    volatile double x = 0;
    for (int i = 0; i < 2000; ++i) x = x + i;
  }
  Check verify(std::uint64_t) override { return {true, 0, 0, ""}; }
  std::size_t calls = 0;
  std::set<std::size_t> copies_seen;
};
}  // namespace

TEST(Measure, FixedSamplesWarmupAndRotation) {
  CountingImpl impl;
  Stopping s;
  s.fixed_samples = 7;
  s.warmup_calls = 3;
  auto m = measure(impl, 5, s);
  EXPECT_EQ(m.samples.size(), 7u);
  EXPECT_EQ(m.warmup_calls, 3u);
  EXPECT_EQ(m.calls, 7 * m.batch);
  EXPECT_EQ(impl.calls, 3 + m.calls);
  EXPECT_EQ(impl.copies_seen.size(), 5u);
  EXPECT_GT(m.batch, 1u);  // a ~us call is batched up to ~1 ms samples
  EXPECT_EQ(m.reason, StopReason::fixed_count);
  for (double x : m.samples) EXPECT_GT(x, 0);
}

TEST(Measure, CancelStopsSampling) {
  CountingImpl impl;
  std::atomic<bool> cancel{true};
  auto m = measure(impl, 1, Stopping{}, {}, &cancel);
  EXPECT_EQ(m.reason, StopReason::cancelled);
  EXPECT_TRUE(m.samples.empty());
}
