#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "opmeter/engine.hpp"
#include "engine/runner.hpp"

using namespace opmeter;

TEST(Stopping, ConvergesOnlyAfterMinimumCountTimeAndPrecision) {
  Stopping s;  // 0.5%, 10 samples, 0.5 s, 15 s
  EXPECT_FALSE(should_stop(9, 0.001, 1.0, 1.0, s));     // too few samples
  EXPECT_FALSE(should_stop(10, 0.001, 0.4, 1.0, s));    // too little measured time
  EXPECT_FALSE(should_stop(10, 0.006, 1.0, 1.0, s));    // median not yet precise enough
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

TEST(Stopping, PlateauStopsOnlyAfterTheMinimumsAndBeforeTheTimeout) {
  Stopping s;
  EXPECT_FALSE(should_stop(9, 0.02, 1.0, 1.0, s, true));    // too few samples, even on a plateau
  EXPECT_EQ(should_stop(100, 0.02, 1.0, 1.0, s, true), StopReason::plateau);
  EXPECT_EQ(should_stop(100, 0.004, 1.0, 1.0, s, true), StopReason::converged);  // precise wins
  EXPECT_FALSE(should_stop(100, 0.02, 1.0, 1.0, s, false));
}

namespace {
// A device timer whose samples follow a fixed sequence of per-call times (cycled).
class SequenceTimer : public SampleTimer {
 public:
  explicit SequenceTimer(std::vector<double> per_call) : per_call_(std::move(per_call)) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    for (std::size_t i = 0; i < calls; ++i) call();
    return per_call_[next_++ % per_call_.size()] * static_cast<double>(calls);
  }
  std::size_t fixed_batch() const override { return 1; }

 private:
  std::vector<double> per_call_;
  std::size_t next_ = 0;
};

class NopImpl : public Impl {
 public:
  void setup(const Case&, const SetupOptions&) override {}
  void run(std::size_t) override {}
  Check verify(std::uint64_t) override { return {true}; }
};

Stopping fast_rule() {
  Stopping s;  // 0.5% precision, tiny minimum time so the fake samples decide
  s.min_time_s = 1e-3;
  s.warmup_calls = 1;
  s.timeout_s = 5;
  return s;
}
}  // namespace

TEST(Measure, NoisyButStationarySamplesConvergeOnThePrecisionOfTheMedian) {
  // 2% spread between samples (the H100's tensor-core GEMMs): the median is known to 0.5% after
  // about a hundred samples, long before the timeout the old spread-based rule ran into.
  std::vector<double> t;
  for (int i = 0; i < 997; ++i) t.push_back(1e-3 * (1 + 0.07 * (((i * 389) % 997) / 997.0 - 0.5)));
  SequenceTimer timer(t);
  NopImpl impl;
  auto m = measure(impl, 1, fast_rule(), {}, nullptr, &timer);
  EXPECT_EQ(m.reason, StopReason::converged);
  auto s = summarize(m.samples);
  EXPECT_GT(s.rel_noise, 0.018);     // the samples stay as spread as they are...
  EXPECT_LE(s.precision, 0.005);     // ...while their median is precise
  EXPECT_GT(m.samples.size(), 100u);
  EXPECT_LT(m.samples.size(), 400u);  // ~190 expected for a uniform 7% spread
}

TEST(Measure, QuantizedSamplesStopOnAPlateau) {
  // Half the samples one timer tick longer: the median's interval spans the tick however many
  // samples come, so precision stops improving (plateau) instead of running to the timeout.
  SequenceTimer timer({1e-5, 1.1e-5});
  NopImpl impl;
  auto m = measure(impl, 1, fast_rule(), {}, nullptr, &timer);
  EXPECT_EQ(m.reason, StopReason::plateau);
  EXPECT_LT(m.elapsed_s, 4.0);
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
  EXPECT_EQ(cold_copies(1024, 1u << 30, 1e15), 4096u);  // capped
  EXPECT_EQ(kMaxColdCopies, 4096u);
}

TEST(ColdCopies, WithoutAFlushACaseIsColdOnlyWhereItsImplRotatesOrItsInputsOutsizeTheCache) {
  EXPECT_EQ(cold_way(true, false, 8), ColdWay::timer);  // a GPU's flush: no copies needed
  EXPECT_EQ(cold_way(false, true, 8), ColdWay::rotate);  // the host, or a rotating impl in graph mode
  EXPECT_EQ(cold_way(false, false, 1), ColdWay::rotate);  // one set outsizes the cache: cold as it is
  EXPECT_EQ(cold_way(false, false, 8), ColdWay::none);   // graph mode over the same inputs: hot
}

TEST(ColdCopies, EnoughToReadTwiceTheCacheUncapped) {
  EXPECT_EQ(copies_to_exceed(1 << 20, 32 << 20), 64u);
  EXPECT_EQ(copies_to_exceed(100 << 10, 50 << 20), 1024u);  // uncapped
  EXPECT_EQ(copies_to_exceed(100 << 20, 32 << 20), 1u);
  EXPECT_EQ(copies_to_exceed(0, 32 << 20), 1u);
}

TEST(ColdCopies, PlanFlushesRotatesOrSaysWhyItIsHot) {
  const ColdFacts gpu{.timer_makes_cold = true, .impl_rotates = true, .footprint = 16e6, .bytes_read = 8e6,
                      .budget = 1e12, .cache_bytes = 50u << 20};
  auto flushed = plan_cold(gpu);
  EXPECT_EQ(flushed.way, ColdWay::timer);
  EXPECT_EQ(flushed.copies, 1u);
  auto graph = gpu;
  graph.calls_per_replay = 20;  // needs ceil(2 x 52.4 MB / 8 MB) = 14 copies: 20 divide 20
  auto rotated = plan_cold(graph);
  EXPECT_EQ(rotated.way, ColdWay::rotate);
  EXPECT_EQ(rotated.copies, 20u);
  graph.calls_per_replay = 8;
  auto few = plan_cold(graph);
  EXPECT_EQ(few.way, ColdWay::none);
  EXPECT_EQ(few.hot_because, "the 14 copies whose reads would exceed twice the cache do not divide into the 8 calls each "
                             "sample replays, within memory (a graph of a multiple of 14 launches would)");
  graph.impl_rotates = false;
  EXPECT_EQ(plan_cold(graph).hot_because, "back-to-back launches over the same inputs (this impl does not rotate input copies)");
  const ColdFacts host{.footprint = 1 << 20, .bytes_read = 1 << 20, .budget = 1e12, .cache_bytes = 32u << 20};
  auto cpu = plan_cold(host);  // the host: copies of the footprint, capped as cold_copies caps them
  EXPECT_EQ(cpu.way, ColdWay::rotate);
  EXPECT_EQ(cpu.copies, 64u);
  EXPECT_EQ(cpu.partly_cached, "");  // 64 MiB of copies against 32 MiB
  // 4 KB a set: the 4096 copies hold 16 MiB, short of twice the cache, and the plan says so.
  const ColdFacts tiny{.footprint = 4096, .bytes_read = 4096, .budget = 1e12, .cache_bytes = 32u << 20};
  auto small = plan_cold(tiny);
  EXPECT_EQ(small.copies, 4096u);
  EXPECT_EQ(small.partly_cached,
            "cold over 4096 input sets of 0.00391 MiB (16 MiB in all, as many as opmeter rotates): "
            "less than twice the 32 MiB cache, so part of each call's reads may come from it");
  // A memory budget of 8 sets of 1 MiB: short for want of memory.
  const ColdFacts poor{.footprint = 1 << 20, .bytes_read = 1 << 20, .budget = 8 << 20, .cache_bytes = 32u << 20};
  EXPECT_NE(plan_cold(poor).partly_cached.find("(8 MiB in all, as many as memory allows)"), std::string::npos)
      << plan_cold(poor).partly_cached;
}

TEST(ColdCopies, TableCopiesHoldTwiceTheCacheWithinTheBudgetLeft) {
  const double mib = 1 << 20;
  EXPECT_EQ(table_copies(10, mib, 100 * mib, 512u << 20, 1e12), 10u);      // 11 would hold 1 GiB: at most one a set
  EXPECT_EQ(table_copies(10, mib, 100 * mib, 512u << 20, 310 * mib), 3u);  // 300 MiB left after the sets
  EXPECT_EQ(table_copies(10, mib, 100 * mib, 32u << 20, 1e12), 1u);        // one already twice the cache
  EXPECT_EQ(table_copies(10, mib, 100 * mib, 512u << 20, 5 * mib), 1u);    // never none
  EXPECT_EQ(table_copies(10, mib, 0, 32u << 20, 1e12), 10u);
}

TEST(ColdCopies, SetsOfAnOpWithTablesAreCountedByWhatACallTouchesAndShareTablesTooLargeToCopy) {
  const double mib = 1 << 20;
  // A call reads 1 MiB of rows and ids and writes 1 MiB: 32 sets touch 64 MiB, twice the cache.
  // Whole copies of the 320 MiB table would take 10 GiB: the sets share one, which holds more
  // than twice the cache, so at most 32/320 of the rows gathered at random are cached.
  const ColdFacts big{.footprint = 321 * mib,
                      .bytes_read = mib,
                      .budget = 4 * 1024 * mib,
                      .cache_bytes = 32u << 20,
                      .table_bytes = 320 * mib,
                      .bytes_written = mib};
  auto shared = plan_cold(big);
  EXPECT_EQ(shared.way, ColdWay::rotate);
  EXPECT_EQ(shared.copies, 32u);
  EXPECT_EQ(shared.table_copies, 1u);
  EXPECT_EQ(shared.partly_cached,
            "cold over 32 input sets sharing 1 copy of the 320 MiB of tables (too large to copy for each set): "
            "their rows are gathered at random, up to 10% of them from the 32 MiB cache");
  // A 1 MiB table, 64 KiB touched a call: 1024 sets, whole copies (1.06 GiB) within the budget.
  const ColdFacts small{.footprint = mib + 64 * 1024,
                        .bytes_read = 32 * 1024,
                        .budget = 4 * 1024 * mib,
                        .cache_bytes = 32u << 20,
                        .table_bytes = mib,
                        .bytes_written = 32 * 1024};
  auto copied = plan_cold(small);
  EXPECT_EQ(copied.copies, 1024u);
  EXPECT_EQ(copied.table_copies, 0u);
  EXPECT_EQ(copied.partly_cached, "");
  // Counted by the footprint, as an op without tables is: 61 sets, whose calls touch only 3.8 MiB.
  auto whole = small;
  whole.table_bytes = 0;
  EXPECT_EQ(plan_cold(whole).copies, 61u);
  // An impl that copies set 0 whole (a C plugin's): sets by the footprint, and a table larger than
  // twice the cache gets one, whose calls gather the same 2 MiB of rows: said so.
  auto unshared = big;
  unshared.table_bytes = 0;
  unshared.tables_not_shared = true;
  EXPECT_EQ(plan_cold(unshared).copies, 1u);
  EXPECT_EQ(plan_cold(unshared).partly_cached,
            "cold over one input set (this impl copies the tables whole, with the same indices in every set): its "
            "calls gather the same rows, 2 MiB in all, less than twice the 32 MiB cache, so part of each call's "
            "reads may come from it");
  unshared.footprint = 4 * mib;  // 16 copies of 4 MiB, whose calls touch 32 MiB in all
  EXPECT_EQ(plan_cold(unshared).copies, 16u);
  EXPECT_NE(plan_cold(unshared).partly_cached.find("cold over 16 copies of one input set"), std::string::npos);
  // A call that alone touches more than twice the cache: one set.
  auto one = big;
  one.bytes_read = one.bytes_written = 40 * mib;
  EXPECT_EQ(plan_cold(one).copies, 1u);
  EXPECT_EQ(plan_cold(one).partly_cached, "");
  // A replayed graph of 20 launches reading 8 MiB each against a 50 MiB L2: 13 copies wanted,
  // 20 taken; 20 whole copies exceed the budget, 20 sets sharing one table do not.
  auto graph = big;
  graph.calls_per_replay = 20;
  graph.bytes_read = 8 * mib;
  graph.cache_bytes = 50u << 20;
  auto replayed = plan_cold(graph);
  EXPECT_EQ(replayed.way, ColdWay::rotate);
  EXPECT_EQ(replayed.copies, 20u);
  EXPECT_EQ(replayed.table_copies, 1u);
  EXPECT_NE(replayed.partly_cached.find("cold over 20 input sets sharing 1 copy"), std::string::npos)
      << replayed.partly_cached;
}

TEST(ColdCopies, AReplayedGraphGetsADivisorOfItsLaunchesSoEveryCopyIsReadEvenly) {
  EXPECT_EQ(replay_copies(5, 32, 1 << 20, 1e12), 8u);
  EXPECT_EQ(replay_copies(14, 20, 1 << 20, 1e12), 20u);  // 14 would read copy 0 again 6 calls later
  EXPECT_EQ(replay_copies(2, 20, 1 << 20, 1e12), 2u);
  EXPECT_EQ(replay_copies(22, 20, 1 << 20, 1e12), 0u);   // more copies than launches: cannot be cold
  EXPECT_EQ(replay_copies(5, 32, 1 << 20, 7 << 20), 0u);  // 8 copies over the budget
  EXPECT_EQ(replay_copies(1, 7, 1 << 20, 1e12), 1u);
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

namespace {
// A timer for calls that run elsewhere (a worker): the host sees each warm-up call take 2 ms (the
// round trip), the timer knows it took 10 us where it ran.
class RemoteTimer : public SampleTimer {
 public:
  std::optional<double> time(std::size_t calls, const std::function<void()>&) override { return 1e-5 * double(calls); }
  std::optional<double> last_call_seconds() const override { return 1e-5; }
};
class SlowToReachImpl : public NopImpl {
 public:
  void sync() override { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }
};
}  // namespace

TEST(Measure, BatchesAreSizedByTheCallTimeWhereTheCallsRunNotByTheRoundTrip) {
  RemoteTimer timer;
  SlowToReachImpl impl;
  Stopping s = fast_rule();
  s.fixed_samples = 3;
  auto m = measure(impl, 1, s, {}, nullptr, &timer);
  EXPECT_EQ(m.batch, batch_size(1e-5, s.target_sample_s, timer_overhead_s()));  // 100 calls of 10 us
  EXPECT_GE(m.batch, 100u);
}

// run and check share one rule for a case cut short by Ctrl-C: only the engine's own `error`
// "interrupted", made while the flag is set, is dropped (and rerun by --resume); any other result
// is recorded, even one whose reason mentions an interruption.
TEST(CutByInterrupt, OnlyTheEnginesInterruptedErrorWhileCancelled) {
  auto result = [](Status s, const std::string& reason) {
    Result r;
    r.status = s;
    r.reason = reason;
    return r;
  };
  std::atomic<bool> cancel{true};
  EXPECT_TRUE(cut_by_interrupt(result(Status::error, kInterruptedReason), &cancel));
  EXPECT_FALSE(cut_by_interrupt(result(Status::error, "the worker's call was interrupted by its own timeout"), &cancel));
  EXPECT_FALSE(cut_by_interrupt(result(Status::failed, kInterruptedReason), &cancel));
  EXPECT_FALSE(cut_by_interrupt(result(Status::ok, ""), &cancel));
  EXPECT_FALSE(cut_by_interrupt(result(Status::error, kInterruptedReason), nullptr));
  cancel = false;
  EXPECT_FALSE(cut_by_interrupt(result(Status::error, kInterruptedReason), &cancel));
}
