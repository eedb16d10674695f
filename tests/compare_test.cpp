// compare: statistics on synthetic samples with known outcomes, verdicts, the gate, contexts.
#include <gtest/gtest.h>

#include "analysis/compare.hpp"
#include "opmeter/stats.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;
using namespace opmeter::fixtures;

namespace {

const char* kCaseA = "gemm/onednn/fp32/M=256,N=256,K=256/threads=2";
const char* kCaseB = "silu/opmeter/fp32/batch=1,seq=256,hidden=1024/threads=2";

nlohmann::json context(const std::string& cpu, const std::string& onednn) {
  return {{"cpu", {{"model", cpu}, {"usable_cpus", 2}}},
          {"libraries", {{"onednn", onednn}}},
          {"opmeter", {{"version", "0.1.0"}, {"git_sha", "abc"}}}};
}

ResultSet set_of(std::vector<Result> results, nlohmann::json ctx = context("EPYC", "2.6.3")) {
  return ResultSet{"mem", ResultsFormat::results_json, std::move(ctx), std::move(results)};
}

Result sampled(const char* c, double center, double spread, unsigned seed, std::size_t n = 40) {
  return measured(c, samples_around(center, n, spread, seed));
}

}  // namespace

TEST(CompareVerdict, Rules) {
  CompareOptions o;  // alpha 0.05, threshold 1%
  EXPECT_EQ(compare_verdict(0.005, 1e-9, true, o), "same");       // significant but negligible
  EXPECT_EQ(compare_verdict(0.10, 1e-9, true, o), "slower");
  EXPECT_EQ(compare_verdict(-0.10, 1e-9, true, o), "faster");
  EXPECT_EQ(compare_verdict(0.10, 0.2, true, o), "uncertain");    // large but not significant
  EXPECT_EQ(compare_verdict(0.10, 1e-9, false, o), "untestable");  // too few samples to test
  EXPECT_EQ(compare_verdict(0.005, 1, false, o), "same");            // however few, a negligible change
}

TEST(CompareVerdict, TheSmallestPValueIsThatOfPerfectlySeparatedSamples) {
  // Independently, where the test is exact: two of the C(n1 + n2, n1) equally likely orderings.
  auto choose = [](std::size_t n, std::size_t k) {
    double c = 1;
    for (std::size_t i = 1; i <= k; ++i) c = c * double(n - k + i) / double(i);
    return c;
  };
  for (std::size_t n1 : {3, 4, 5, 10})
    for (std::size_t n2 : {3, 4, 6, 10}) EXPECT_NEAR(smallest_p_value(n1, n2), 2 / choose(n1 + n2, n1), 1e-12) << n1 << " " << n2;
  EXPECT_NEAR(smallest_p_value(3, 3), 0.1, 1e-12);       // 2 of C(6, 3) = 20 orderings
  EXPECT_NEAR(smallest_p_value(4, 4), 2.0 / 70, 1e-12);  // C(8, 4) = 70
  EXPECT_FALSE(can_reach_alpha(3, 3, 0.05));
  EXPECT_FALSE(can_reach_alpha(3, 4, 0.05));  // 2 / 35 = 0.057
  EXPECT_TRUE(can_reach_alpha(3, 5, 0.05));   // 2 / 56 = 0.036
  EXPECT_TRUE(can_reach_alpha(4, 4, 0.05));
  EXPECT_FALSE(can_reach_alpha(2, 100, 0.05));  // fewer than 3 on a side: never tested
  // Past 10 samples a side the test's normal approximation: 3 against 11 cannot reach 0.01, though
  // 2 / C(14, 3) = 0.0055 would.
  EXPECT_GT(smallest_p_value(3, 11), 0.01);
  EXPECT_FALSE(can_reach_alpha(3, 11, 0.01));
}

// 3 a side, each side tied (a timer's ticks): the exact test of the tied ranks gives p = 0.1, as
// separated samples do, so the doubling is `untestable`, which fails the gate all the same. (The
// normal approximation had made it p = 0.047, `slower`, below what 3 a side can show.)
TEST(Compare, TiedSamplesAreTestedExactly) {
  auto base = measured(kCaseA, {1e-3, 1e-3, 1e-3}), slow = measured(kCaseA, {2e-3, 2e-3, 2e-3});
  auto c = compare_results(set_of({base}), set_of({slow}));
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_NEAR(c.cases[0].p_value, 0.1, 1e-12);
  EXPECT_EQ(c.cases[0].verdict, "untestable");
  EXPECT_TRUE(c.gate_failed());
}

TEST(Compare, ADoublingMeasuredThreeTimesASideFailsTheGateAsUntestable) {
  auto base = sampled(kCaseA, 1e-3, 0.01, 1, 3), slow = sampled(kCaseA, 2e-3, 0.01, 2, 3);
  auto c = compare_results(set_of({base}), set_of({slow}));
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.cases[0].verdict, "untestable");
  EXPECT_TRUE(c.gate_failed());
  EXPECT_EQ(c.overall.untestable, 1u);
  auto small = compare_results(set_of({base}), set_of({sampled(kCaseA, 1.03e-3, 0.01, 2, 3)}));  // under --fail-above
  EXPECT_EQ(small.cases[0].verdict, "untestable");
  EXPECT_FALSE(small.gate_failed());
  auto enough = compare_results(set_of({sampled(kCaseA, 1e-3, 0.01, 1, 4)}), set_of({sampled(kCaseA, 2e-3, 0.01, 2, 4)}));
  EXPECT_EQ(enough.cases[0].verdict, "slower");
}

TEST(Compare, CasesMeasuredOnNeitherSideAreCountedAndNamed) {
  auto a = sampled(kCaseA, 1e-3, 0.01, 1);
  auto failed = with_status(kCaseB, Status::failed, "wrong result");
  auto c = compare_results(set_of({a, failed}), set_of({a, failed}));
  ASSERT_EQ(c.cases.size(), 2u);
  EXPECT_EQ(c.overall.unmeasured, 1u);
  EXPECT_EQ(c.overall.compared, 1u);
  CompareOptions o;
  EXPECT_NE(compare_markdown(c, o).find("1 measured on neither side"), std::string::npos) << compare_markdown(c, o);
  EXPECT_EQ(compare_json(c, o)["overall"]["unmeasured"], 1);
}

TEST(Compare, IdenticalSamplesAreSameAndPass) {
  auto a = sampled(kCaseA, 1e-3, 0.02, 7);
  auto c = compare_results(set_of({a}), set_of({a}));
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.cases[0].verdict, "same");
  EXPECT_DOUBLE_EQ(c.cases[0].change, 0.0);
  EXPECT_GT(c.cases[0].p_value, 0.9);
  EXPECT_FALSE(c.gate_failed());
  EXPECT_TRUE(c.context_warnings.empty());
}

TEST(Compare, TenPercentShiftIsSlowerAndFailsTheGate) {
  auto base = sampled(kCaseA, 1e-3, 0.01, 1), slow = sampled(kCaseA, 1.1e-3, 0.01, 2);
  auto c = compare_results(set_of({base}), set_of({slow}));
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.cases[0].verdict, "slower");
  EXPECT_NEAR(c.cases[0].change, 0.10, 0.01);
  EXPECT_LT(c.cases[0].p_value, 1e-6);
  EXPECT_TRUE(c.cases[0].fails_gate);
  EXPECT_TRUE(c.gate_failed());
  EXPECT_NEAR(c.overall.geomean_ratio, 1.10, 0.01);

  CompareOptions lenient;
  lenient.fail_above_pct = 20;
  auto ok = compare_results(set_of({base}), set_of({slow}), lenient);
  EXPECT_EQ(ok.cases[0].verdict, "slower");  // still slower, but within what the gate allows
  EXPECT_FALSE(ok.gate_failed());

  auto faster = compare_results(set_of({slow}), set_of({base}));
  EXPECT_EQ(faster.cases[0].verdict, "faster");
  EXPECT_FALSE(faster.gate_failed());
}

TEST(Compare, NoisyOverlapIsUncertainNotSlower) {
  // 3% apart with +-40% noise over 8 samples: far from significant.
  auto base = sampled(kCaseA, 1e-3, 0.4, 3, 8), neu = sampled(kCaseA, 1.03e-3, 0.4, 4, 8);
  auto c = compare_results(set_of({base}), set_of({neu}));
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_GT(c.cases[0].p_value, 0.05);
  // These seeds' samples (mt19937, uniform): their medians differ by more than the 1% that counts
  // as the same, but not significantly.
  EXPECT_EQ(c.cases[0].verdict, "uncertain") << c.cases[0].change;
  EXPECT_FALSE(c.gate_failed());
}

TEST(Compare, StatusChangesOnlyOnOneSideAndGeomeanPerOp) {
  auto a = sampled(kCaseA, 1e-3, 0.01, 1), b = sampled(kCaseB, 2e-3, 0.01, 2);
  auto b_slow = sampled(kCaseB, 2.4e-3, 0.01, 3);
  auto a_failed = with_status(kCaseA, Status::failed, "wrong result");
  auto extra = sampled("gemm/onednn/fp32/M=512,N=512,K=512/threads=2", 1e-2, 0.01, 4);
  auto gone = sampled("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-5, 0.01, 5);

  auto c = compare_results(set_of({a, b, gone}), set_of({a_failed, b_slow, extra}));
  ASSERT_EQ(c.cases.size(), 2u);
  EXPECT_EQ(c.cases[0].verdict, "broken");
  EXPECT_TRUE(c.cases[0].fails_gate);
  EXPECT_EQ(c.cases[1].verdict, "slower");
  EXPECT_EQ(c.only_base, std::vector<std::string>{gone.case_string});
  EXPECT_EQ(c.only_new, std::vector<std::string>{extra.case_string});
  ASSERT_EQ(c.per_op.size(), 2u);
  EXPECT_EQ(c.per_op[0].name, "gemm");
  EXPECT_EQ(c.per_op[0].broken, 1u);
  EXPECT_EQ(c.per_op[0].compared, 0u);
  EXPECT_EQ(c.per_op[1].name, "silu");
  EXPECT_NEAR(c.per_op[1].geomean_ratio, 1.2, 0.01);

  auto fixed = compare_results(set_of({a_failed}), set_of({a}));
  EXPECT_EQ(fixed.cases[0].verdict, "fixed");
  EXPECT_FALSE(fixed.gate_failed());
}

TEST(Compare, GeomeanOverallWeighsEveryCaseAlike) {
  auto a = sampled(kCaseA, 1e-3, 0.001, 1), b = sampled(kCaseB, 1e-6, 0.001, 2);
  auto a2 = sampled(kCaseA, 2e-3, 0.001, 3), b2 = sampled(kCaseB, 0.5e-6, 0.001, 4);
  auto c = compare_results(set_of({a, b}), set_of({a2, b2}));
  EXPECT_NEAR(c.overall.geomean_ratio, 1.0, 0.01);  // 2x slower and 2x faster cancel
  EXPECT_EQ(c.overall.slower, 1u);
  EXPECT_EQ(c.overall.faster, 1u);
}

TEST(Compare, ContextDifferencesAreNamed) {
  auto w = context_differences(context("EPYC", "2.6.3"), context("Xeon", "3.1"));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("cpu.model"), std::string::npos);
  EXPECT_NE(w[0].find("'EPYC'"), std::string::npos);
  EXPECT_NE(w[1].find("libraries.onednn"), std::string::npos);

  auto other_build = context("EPYC", "2.6.3");
  other_build["opmeter"]["git_sha"] = "def";  // comparing two builds is the point, not a warning
  other_build["date"] = "later";
  EXPECT_TRUE(context_differences(context("EPYC", "2.6.3"), other_build).empty());

  auto gpu_base = context("EPYC", "2.6.3"), gpu_new = gpu_base;
  gpu_base["gpus"] = {{{"name", "NVIDIA H100"}, {"idle_power_w", 70.5}, {"sm_clock_now_mhz", 345}}};
  gpu_new["gpus"] = {{{"name", "NVIDIA H100"}, {"idle_power_w", 68.0}, {"sm_clock_now_mhz", 1980}}};
  EXPECT_TRUE(context_differences(gpu_base, gpu_new).empty());  // readings of the moment
  gpu_new["gpus"][0]["name"] = "NVIDIA H200";
  auto gpu = context_differences(gpu_base, gpu_new);
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_NE(gpu[0].find("H200"), std::string::npos) << gpu[0];

  auto journal = context_differences(nlohmann::json::object(), context("EPYC", "2.6.3"));
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_NE(journal[0].find("BASE has no machine context"), std::string::npos);
}

TEST(Compare, ThreadCountsThatDifferAreAWarning) {
  auto a = sampled(kCaseA, 1e-3, 0.01, 1);
  auto one = sampled("gemm/onednn/fp32/M=256,N=256,K=256/threads=1", 1e-3, 0.01, 2);
  auto c = compare_results(set_of({a}), set_of({one, a}));
  ASSERT_EQ(c.context_warnings.size(), 1u);
  EXPECT_NE(c.context_warnings[0].find("thread counts differ: BASE 2, NEW 1,2"), std::string::npos);
}

// A case twice in a set (merged from two machines, or resumed) is compared by its last record,
// and a warning says so on the side that has it.
TEST(Compare, ACaseRecordedTwiceIsComparedByItsLastRecordWithAWarning) {
  auto base = sampled(kCaseA, 1e-3, 0.01, 1);
  auto first = sampled(kCaseA, 2e-3, 0.01, 2), last = sampled(kCaseA, 1e-3, 0.01, 3), b = sampled(kCaseB, 1e-5, 0.01, 4);
  auto c = compare_results(set_of({base, b}), set_of({first, b, last}));
  ASSERT_EQ(c.context_warnings.size(), 1u);
  const std::string& w = c.context_warnings[0];
  EXPECT_NE(w.find("NEW: 1 case appears more than once (merged or resumed runs): "), std::string::npos) << w;
  EXPECT_NE(w.find("; each is compared by its last record"), std::string::npos) << w;
  EXPECT_NE(w.find(kCaseA), std::string::npos) << w;
  ASSERT_EQ(c.cases.size(), 2u);
  for (auto& x : c.cases) {  // the last record, the same time as BASE's, not the first (2x)
    if (x.case_string == kCaseA) {
      EXPECT_EQ(x.verdict, "same") << x.case_string;
    }
  }
  EXPECT_TRUE(compare_results(set_of({base, b}), set_of({last, b})).context_warnings.empty());
}

TEST(Compare, CasesMeasuredUnderContentionAreAWarningNamingThem) {
  auto base = sampled(kCaseA, 1e-3, 0.01, 1), b2 = sampled(kCaseB, 1e-5, 0.01, 3);
  auto loaded = sampled(kCaseA, 9e-3, 0.01, 2), l2 = sampled(kCaseB, 1e-5, 0.01, 4);
  loaded.add_flag("contended");
  l2.add_flag("contended");
  auto c = compare_results(set_of({base, b2}), set_of({loaded, l2}));
  ASSERT_EQ(c.context_warnings.size(), 1u);
  const std::string& w = c.context_warnings[0];
  EXPECT_NE(w.find("2 NEW cases were measured while other processes took their CPUs"), std::string::npos) << w;
  EXPECT_NE(w.find(kCaseA), std::string::npos) << w;
  EXPECT_NE(w.find("and 1 more"), std::string::npos) << w;
  EXPECT_TRUE(compare_results(set_of({base}), set_of({base})).context_warnings.empty());
}

TEST(Compare, MarkdownAndJsonCarryVerdictsAndGate) {
  auto base = sampled(kCaseA, 1e-3, 0.01, 1), slow = sampled(kCaseA, 1.2e-3, 0.01, 2);
  CompareOptions o;
  auto c = compare_results(set_of({base}), set_of({slow}, context("Xeon", "2.6.3")), o);
  auto md = compare_markdown(c, o);
  EXPECT_NE(md.find("**FAIL**"), std::string::npos);
  EXPECT_NE(md.find("WARNING: cpu.model differs"), std::string::npos);
  EXPECT_NE(md.find("| `" + base.case_string + "` |"), std::string::npos);
  EXPECT_NE(md.find("(fails the gate)"), std::string::npos);
  auto j = compare_json(c, o);
  EXPECT_EQ(j["schema"], "opmeter-compare/2");
  EXPECT_EQ(j["gate"], "fail");
  EXPECT_EQ(j["cases"][0]["verdict"], "slower");
  EXPECT_NEAR(j["cases"][0]["change"].get<double>(), 0.2, 0.02);
  EXPECT_EQ(j["per_op"][0]["name"], "gemm");
  EXPECT_EQ(j["warnings"].size(), 1u);
}

TEST(Compare, SustainedComparesGpuCasesAtSteadyPower) {
  // Same burst, but NEW's sustained figure is 10% slower (say, a lower power limit).
  const char* gpu = "gemm/cublaslt/bf16/M=8192,N=8192,K=8192/device=cuda:0,hot";
  auto with_sustained = [&](double sustained_center, unsigned seed) {
    Result r = sampled(gpu, 1.5e-3, 0.01, seed);
    auto s = samples_around(sustained_center, 40, 0.01, seed + 7);
    r.sustained = Sustained{s, summarize(s)};
    return r;
  };
  auto base = set_of({with_sustained(1.6e-3, 1), sampled(kCaseA, 1e-4, 0.01, 3)});
  auto neu = set_of({with_sustained(1.76e-3, 1), sampled(kCaseA, 1e-4, 0.01, 3)});

  auto burst = compare_results(base, neu);
  EXPECT_FALSE(burst.gate_failed());  // the burst medians are the same samples
  CompareOptions o;
  o.sustained = true;
  auto steady = compare_results(base, neu, o);
  EXPECT_TRUE(steady.gate_failed());
  for (auto& c : steady.cases) {
    if (c.case_string == gpu) {
      EXPECT_EQ(c.figure, "sustained");
      EXPECT_EQ(c.verdict, "slower");
      EXPECT_NEAR(c.change, 0.10, 0.02);
    } else {
      EXPECT_EQ(c.figure, "median");  // a CPU case has no sustained figure
      EXPECT_EQ(c.verdict, "same");
    }
  }
  EXPECT_NE(compare_markdown(steady, o).find("sustained figure"), std::string::npos);
  EXPECT_EQ(compare_json(steady, o)["cases"][0]["figure"], "sustained");
}

// A recipe whose SQNR fell between the runs is named, though its time is the same: its accuracy
// changed. A rise, or a change within a tenth of a dB, says nothing.
TEST(Compare, AnSqnrThatFellIsAWarning) {
  const char* q = "linear/opmeter_quant/bf16/batch=1,seq=1,hidden=256,out=256,act=none,quant=int8wo/threads=2";
  auto with_sqnr = [&](double db, unsigned seed) {
    Result r = sampled(q, 1e-5, 0.001, seed);
    r.set_metric("sqnr_db", {.value = db, .unit = "dB", .better = Better::higher});
    return r;
  };
  auto fell = compare_results(set_of({with_sqnr(41.2, 1)}), set_of({with_sqnr(38.0, 2)}));
  ASSERT_EQ(fell.context_warnings.size(), 1u);
  EXPECT_EQ(fell.context_warnings[0],
            std::string(q) + ": SQNR fell from 41.2 dB to 38.0 dB (its accuracy, not its time)");
  EXPECT_NE(compare_markdown(fell, {}).find("WARNING: " + std::string(q) + ": SQNR fell"), std::string::npos);
  EXPECT_TRUE(compare_results(set_of({with_sqnr(41.2, 1)}), set_of({with_sqnr(41.15, 2)})).context_warnings.empty());
  EXPECT_TRUE(compare_results(set_of({with_sqnr(38.0, 1)}), set_of({with_sqnr(41.2, 2)})).context_warnings.empty());
}

// A case BASE measured and NEW lacks (NEW stopped part-way, or lost its torn last line) fails the
// gate, unless --allow-missing says NEW ran a subset; one BASE did not measure either is no loss.
TEST(Compare, CasesMissingFromNewFailTheGate) {
  auto a = sampled(kCaseA, 1e-3, 0.01, 1), b = sampled(kCaseB, 2e-3, 0.01, 2);
  auto a2 = sampled(kCaseA, 1e-3, 0.01, 3);
  auto c = compare_results(set_of({a, b}), set_of({a2}));
  EXPECT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.missing, std::vector<std::string>{b.case_string});
  EXPECT_TRUE(c.gate_failed());
  EXPECT_NE(compare_markdown(c, {}).find("1 measured in BASE is missing from NEW (fails the gate"), std::string::npos);
  EXPECT_EQ(compare_json(c, {})["missing"], nlohmann::json::array({b.case_string}));

  CompareOptions subset;
  subset.allow_missing = true;
  auto allowed = compare_results(set_of({a, b}), set_of({a2}), subset);
  EXPECT_EQ(allowed.missing.size(), 1u);
  EXPECT_FALSE(allowed.gate_failed());

  auto skipped = with_status(kCaseB, Status::skipped, "no GPU");
  auto lost_skip = compare_results(set_of({a, skipped}), set_of({a2}));
  EXPECT_EQ(lost_skip.only_base, std::vector<std::string>{skipped.case_string});
  EXPECT_TRUE(lost_skip.missing.empty());
  EXPECT_FALSE(lost_skip.gate_failed());
}

// Samples in two clusters: NEW is mostly slower (60 of 100 samples in its upper cluster, above
// every BASE sample but the upper 60), yet its median is lower. The ranks say slower, the median
// faster: `mixed`, which fails the gate, where the median alone passed it as "faster".
TEST(Compare, RanksAndMedianPointingApartAreMixed) {
  std::vector<double> base, neu;
  for (int i = 0; i < 40; ++i) base.push_back(1.0e-5 * (1 + 1e-5 * i));
  for (int i = 0; i < 60; ++i) base.push_back(2.0e-5 * (1 + 1e-5 * i));
  for (int i = 0; i < 60; ++i) neu.push_back(1.5e-5 * (1 + 1e-5 * i));
  for (int i = 0; i < 40; ++i) neu.push_back(3.0e-5 * (1 + 1e-5 * i));
  auto c = compare_results(set_of({measured(kCaseA, base)}), set_of({measured(kCaseA, neu)}));
  ASSERT_EQ(c.cases.size(), 1u);
  const auto& x = c.cases[0];
  // Independently: the median moved from the upper cluster (2e-5) to the lower (1.5e-5), and NEW
  // is the larger in more than half of the pairs (40 x 100 + 60 x 40 of 100 x 100).
  EXPECT_LT(x.change, -0.2);
  std::size_t new_larger = 0;
  for (double b : base)
    for (double n : neu) new_larger += n > b;
  EXPECT_EQ(new_larger, 6400u);
  EXPECT_EQ(x.direction, 1);
  EXPECT_LT(x.p_value, 0.05);
  EXPECT_EQ(x.verdict, "mixed");
  EXPECT_TRUE(x.fails_gate);
  EXPECT_EQ(c.overall.mixed, 1u);
  // The reverse: mostly faster, with a median 33% higher: mixed too, and its median fails the gate.
  auto r = compare_results(set_of({measured(kCaseA, neu)}), set_of({measured(kCaseA, base)}));
  EXPECT_EQ(r.cases[0].verdict, "mixed");
  EXPECT_EQ(r.cases[0].direction, -1);
  EXPECT_TRUE(r.gate_failed());
  // Either side is held to --fail-above: NEW's mean is 31.25% slower (2.1e-5 over 1.6e-5, by the
  // clusters' weights), the reverse's median 33.3%; at 35% both pass.
  CompareOptions lenient;
  lenient.fail_above_pct = 35;
  EXPECT_FALSE(
      compare_results(set_of({measured(kCaseA, base)}), set_of({measured(kCaseA, neu)}), lenient).gate_failed());
  EXPECT_FALSE(
      compare_results(set_of({measured(kCaseA, neu)}), set_of({measured(kCaseA, base)}), lenient).gate_failed());
  lenient.fail_above_pct = 30;
  EXPECT_TRUE(
      compare_results(set_of({measured(kCaseA, base)}), set_of({measured(kCaseA, neu)}), lenient).gate_failed());
  EXPECT_EQ(rank_direction(0, 3, 3), 1);  // every BASE sample below every NEW one
  EXPECT_EQ(rank_direction(4.5, 3, 3), 0);
  EXPECT_EQ(compare_verdict(-0.25, 1e-4, true, CompareOptions{}, 1), "mixed");
  EXPECT_EQ(compare_verdict(0.25, 1e-4, true, CompareOptions{}, 1), "slower");
}

// The JSON has null where a case has no value: no median on a side that did not measure, no
// change or p where nothing was compared or tested.
TEST(Compare, JsonHasNullWhereThereIsNoValue) {
  auto a = sampled(kCaseA, 1e-3, 0.01, 1);
  auto failed = with_status(kCaseA, Status::failed, "wrong result");
  auto j = compare_json(compare_results(set_of({a}), set_of({failed})), {});
  auto& broken = j["cases"][0];
  EXPECT_EQ(broken["verdict"], "broken");
  EXPECT_NEAR(broken["base_median_s"].get<double>(), a.summary.median, 1e-15);
  EXPECT_TRUE(broken["new_median_s"].is_null());
  EXPECT_TRUE(broken["change"].is_null());
  EXPECT_TRUE(broken["p_value"].is_null());
  auto two = compare_json(
      compare_results(set_of({measured(kCaseA, {1e-3, 1e-3})}), set_of({measured(kCaseA, {2e-3, 2e-3})})), {});
  EXPECT_NEAR(two["cases"][0]["change"].get<double>(), 1.0, 1e-12);
  EXPECT_TRUE(two["cases"][0]["p_value"].is_null());  // 2 samples a side: not tested
  auto tested = compare_json(compare_results(set_of({a}), set_of({sampled(kCaseA, 1.2e-3, 0.01, 2)})), {});
  EXPECT_LT(tested["cases"][0]["p_value"].get<double>(), 1e-6);
  EXPECT_EQ(tested["options"]["allow_missing"], false);
}

// What decides the work or the timing of a case without being in its string: the cold cache's
// size, the batch a sample times, the build.
TEST(Compare, SettingsThatChangeTheTimeMustMatch) {
  auto base = context("EPYC", "2.6.3"), neu = base;
  base["cpu"]["llc_bytes_used"] = 100663296;
  neu["cpu"]["llc_bytes_used"] = 65536;
  base["opmeter"]["build_type"] = "Release";
  neu["opmeter"]["build_type"] = "Debug";
  auto w = context_differences(base, neu);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], "cpu.llc_bytes_used differs: BASE '100663296', NEW '65536'");
  EXPECT_EQ(w[1], "opmeter.build_type differs: BASE 'Release', NEW 'Debug'");
  neu["opmeter"]["git_sha"] = "def";  // what is being compared
  EXPECT_EQ(context_differences(base, neu).size(), 2u);
}
