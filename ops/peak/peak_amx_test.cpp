// kernel=amx, the CPU peak on the AMX tile unit: its work and checksum, which dtypes and CPUs
// plan it, its messages, and that an AMX-backed bf16 matmul is no longer "faster than peak".
#include <gtest/gtest.h>

#include <algorithm>

#include "config/config.hpp"
#include "engine/runner.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "ops/peak/peak.hpp"
#include "tests/case_problem.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;

namespace {
std::string problem(const std::string& text) { return opmeter::testing::case_problem(text); }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
bool lists(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }
RunOptions quick() { return opmeter::testing::quick_options(); }
}  // namespace

TEST(PeakAmx, WorkAndExpectedChecksumFollowTheInstructionShapes) {
  // tdpbf16ps: 16 x 16 outputs x 32 bf16 products; tdpbssd: x 64 int8 ones; 6 accumulators.
  EXPECT_EQ(peak::amx_ops_per_iter(DType::bf16), 6 * 2.0 * 16 * 16 * 32);
  EXPECT_EQ(peak::amx_ops_per_iter(DType::int8), 6 * 2.0 * 16 * 16 * 64);
  // 1000 iterations: each of 6 x 256 elements gains 32 x 2^-10 (bf16) or 64 (int8) per iteration.
  EXPECT_EQ(peak::amx_expected(DType::bf16, 1000), 6 * 256 * 31.25);
  EXPECT_EQ(peak::amx_expected(DType::int8, 1000), 6 * 256 * 64000.0);
  auto c = parse_case("peak/opmeter/bf16/kernel=amx/threads=2");
  if (!peak::amx_usable(DType::bf16)) GTEST_SKIP() << "this CPU (or Linux) gives no AMX tiles";
  EXPECT_EQ(Registry::global().op("peak")->work(c).flops, 2.0 * peak::kIters * 6 * 2 * 16 * 16 * 32);
}

TEST(PeakAmx, KernelsChecksumIsExact) {
  for (DType d : {DType::bf16, DType::int8}) {
    if (!peak::amx_usable(d)) GTEST_SKIP() << "this CPU (or Linux) gives no AMX tiles for " << to_string(d);
    auto k = peak::select_kernel(d, "amx");
    ASSERT_TRUE(k) << to_string(d);
    EXPECT_EQ(k->fn(peak::kCheckIters), k->expected(peak::kCheckIters)) << to_string(d);
    EXPECT_EQ(k->fn(7), peak::amx_expected(d, 7)) << to_string(d);
  }
}

TEST(PeakAmx, PlannedBesideFmaOnlyWhereTheCpuHasIt) {
  EXPECT_EQ(peak::kernels_for(DType::fp32, false), std::vector<std::string>{"fma"});
  EXPECT_EQ(peak::kernels_for(DType::fp64, false), std::vector<std::string>{"fma"});
  EXPECT_FALSE(lists(peak::kernels_for(DType::bf16, true), "amx"));  // a GPU's bf16: mma, wgmma
  for (DType d : {DType::bf16, DType::int8}) {
    auto k = peak::kernels_for(d, false);
    EXPECT_TRUE(lists(k, "fma")) << to_string(d);
    EXPECT_EQ(lists(k, "amx"), peak::amx_usable(d)) << to_string(d);
  }
  auto cpu = load_config_text("ops: [peak]\ndtypes: [bf16]\n", "t.yaml", 2);
  EXPECT_EQ(cpu.cases.size(), peak::amx_usable(DType::bf16) ? 2u : 1u);
}

TEST(PeakAmx, BadUsesGetAClearMessage) {
  EXPECT_EQ(problem("peak/opmeter/bf16/kernel=amx/threads=1"), "ok");
  EXPECT_EQ(problem("peak/opmeter/int8/kernel=amx/threads=1"), "ok");
  auto fp32 = problem("peak/opmeter/fp32/kernel=amx/threads=1");
  EXPECT_TRUE(has(fp32, "peak kernel amx is for bf16 and int8 (AMX tiles); fp32 uses kernel=fma")) << fp32;
  EXPECT_THROW(validate_case(parse_case("peak/opmeter/fp64/kernel=amx/threads=1")), CaseError);
  auto gpu = problem("peak/cuda/bf16/kernel=amx/device=cuda:0");
  EXPECT_TRUE(has(gpu, "peak kernel amx runs on the CPU")) << gpu;
  EXPECT_THROW(validate_case(parse_case("peak/cuda/bf16/kernel=amx/device=cuda:0")), CaseError);
}

TEST(PeakAmx, WithoutAmxTheCaseIsSkippedWithTheReason) {
  if (peak::amx_usable(DType::bf16)) GTEST_SKIP() << "this CPU has AMX: KernelsChecksumIsExact covers it";
  auto r = run_case(parse_case("peak/opmeter/bf16/kernel=amx/threads=1"), quick());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_TRUE(has(r.reason, "AMX")) << r.reason;
}

TEST(PeakAmx, AnAmxBackedBf16LinearIsNotFasterThanPeak) {
  // oneDNN runs this bf16 matmul on AMX, several times the vector dot product's rate: against
  // kernel=fma alone it was flagged faster-than-peak (~600% of it on a Sapphire Rapids core).
  if (!peak::amx_usable(DType::bf16)) GTEST_SKIP() << "this CPU (or Linux) gives no AMX tiles";
  const Case linear = parse_case("linear/onednn/bf16/batch=1,seq=256,hidden=512,out=512,act=none/threads=1");
  Ceilings ceilings;
  bool planned_amx = false;
  for (auto& c : with_needed_peaks({linear})) {
    if (c.op != "peak") continue;
    planned_amx |= c.get("kernel") == "amx";
    auto r = run_case(c, quick());
    ASSERT_EQ(r.status, Status::ok) << c.to_string() << ": " << r.reason;
    ceilings.learn(r);
  }
  EXPECT_TRUE(planned_amx);
  auto r = run_case(linear, quick());
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  ceilings.annotate(r);
  ASSERT_TRUE(r.pct_peak.has_value());
  EXPECT_FALSE(r.has_flag("faster-than-peak")) << r.details["faster-than-peak"];
}
