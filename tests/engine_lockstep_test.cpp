// The engine's loops with a timer whose calls involve other processes (a collective's ranks):
// every decision that changes which calls a process makes next is taken through the timer, so
// all ranks make the same calls. Here one process stands in for its launch: the timer's any()
// says what another rank said.
#include <gtest/gtest.h>

#include <algorithm>

#include "opmeter/engine.hpp"
#include "engine/run_together.hpp"

using namespace opmeter;

namespace {

class CountingImpl : public Impl {
 public:
  void setup(const Case&, const SetupOptions&) override {}
  void run(std::size_t) override { ++calls; }
  Check verify(std::uint64_t) override { return {}; }
  std::size_t calls = 0;
};

// Every sample is fine here, but another rank discards every `discard_every`-th (its GPU slowed
// down), and wants to stop heating at once.
class LaunchTimer : public SampleTimer {
 public:
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    for (std::size_t i = 0; i < calls; ++i) call();
    ++samples;
    just_timed = true;
    return 1e-3;
  }
  bool any(bool yes) override {
    // The first decision after a sample is whether to discard it: the other rank does, every 3rd.
    bool other = just_timed && samples % 3 == 0;
    just_timed = false;
    return yes || other || other_stops;
  }
  std::size_t samples = 0;
  bool just_timed = false, other_stops = false;
};

}  // namespace

TEST(Lockstep, ASampleAnotherRankDiscardsIsDiscardedHereToo) {
  CountingImpl impl;
  LaunchTimer timer;
  Stopping s;
  s.fixed_samples = 6;
  s.warmup_calls = 1;
  s.fixed_batch = 1;
  Measurement m = measure(impl, 1, s, {}, nullptr, &timer);
  // 6 kept samples need 8 taken: the 3rd and the 6th were the other rank's discards.
  EXPECT_EQ(m.samples.size(), 6u);
  EXPECT_EQ(m.discarded, 2u);
  EXPECT_EQ(timer.samples, 8u);
}

TEST(Lockstep, HeatingStopsWhenAnotherRankStops) {
  CountingImpl impl;
  LaunchTimer timer;
  timer.other_stops = true;
  // Alone this would run for 10 s; the other rank is done after the first batch.
  EXPECT_EQ(run_for_together(impl, 4, 10.0, timer), 4u);
  EXPECT_EQ(impl.calls, 4u);
}

namespace {
// Another rank converges after its 5th sample: this one stops with it, for that rank's reason.
class OtherRankConverges : public SampleTimer {
 public:
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    for (std::size_t i = 0; i < calls; ++i) call();
    ++samples;
    votes_since_sample = 0;
    return 1e-3;
  }
  // After a sample the first vote is on discarding it, the second on stopping: the other rank
  // votes to stop from its 5th sample on.
  bool any(bool yes) override { return yes || (++votes_since_sample == 2 && samples >= 5); }
  double largest(double value) override {
    return std::max(value, samples >= 5 ? static_cast<double>(StopReason::converged) : -1.0);
  }
  std::size_t samples = 0, votes_since_sample = 0;
};
}  // namespace

TEST(Lockstep, ARankStoppedByAnotherRecordsThatRanksReason) {
  CountingImpl impl;
  OtherRankConverges timer;
  Stopping s;
  s.warmup_calls = 1;
  s.fixed_batch = 1;
  s.min_samples = 1000;  // alone, this rank would go on far past the 5th sample
  s.timeout_s = 60;
  Measurement m = measure(impl, 1, s, {}, nullptr, &timer);
  EXPECT_EQ(m.samples.size(), 5u);
  EXPECT_EQ(m.reason, StopReason::converged) << to_string(m.reason);  // not "timeout"
}
