// The collective op's arithmetic: nccl-tests' bus factors, the expected results and the cases.
#include "ops/collective/collective.hpp"

#include <gtest/gtest.h>

#include "engine/op_figures.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/result.hpp"
#include "opmeter/result_fields.hpp"
#include "opmeter/stats.hpp"

using namespace opmeter;
using namespace opmeter::collective;

TEST(Collective, BusFactorsAreNcclTests) {
  // nccl-tests doc/PERFORMANCE.md, for 4 ranks: allreduce 2*3/4, gather/scatter/alltoall 3/4.
  EXPECT_DOUBLE_EQ(bus_factor(Kind::allreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::allgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::alltoall, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::broadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::sendrecv, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Kind::allreduce, 1), 0.0);
}

TEST(Collective, ExpectedResultsOfTwoRanksByHand) {
  // Inputs ((7 r + 3 i) mod 11) - 5: rank 0 gives -5, -2, 1, 4; rank 1 gives 2, 5, -3, 0.
  EXPECT_EQ(input_value(0, 1), -2);
  EXPECT_EQ(input_value(1, 2), -3);
  EXPECT_EQ(expected(Kind::allreduce, 0, 2, 1, 4), 3);           // -2 + 5
  EXPECT_EQ(expected(Kind::reduce_scatter, 1, 2, 0, 4), -2);     // element 2: 1 + -3
  EXPECT_EQ(expected(Kind::allgather, 0, 2, 3, 4), 5);           // rank 1's element 1
  EXPECT_EQ(expected(Kind::alltoall, 0, 2, 2, 4), 2);            // rank 1's block 0, element 0
  EXPECT_EQ(expected(Kind::alltoall, 1, 2, 1, 4), 4);            // rank 0's block 1, element 1
  EXPECT_EQ(expected(Kind::broadcast, 1, 2, 3, 4), 4);           // the root's element 3
  EXPECT_EQ(expected(Kind::sendrecv, 0, 2, 0, 4), 2);            // from rank 1 (the ring's previous)
  EXPECT_EQ(counts(Kind::allgather, 12, 3).send, 4u);
  EXPECT_EQ(counts(Kind::reduce_scatter, 12, 3).recv, 4u);
}

TEST(Collective, CasesAreCheckedAndEveryRankRunsThem) {
  const OpDef* op = Registry::global().op("collective");
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(op->every_rank);
  EXPECT_NO_THROW(op->validate(parse_case("collective/mpi/fp32/kind=alltoall,bytes=4096,inplace=1/threads=1")));
  auto error_of = [&](const char* c) -> std::string {
    try {
      op->validate(parse_case(c));
    } catch (const UsageError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of("collective/mpi/fp32/kind=gather,bytes=4096,inplace=0/threads=1").find("kind=gather is not one of allreduce"),
            std::string::npos);
  EXPECT_NE(error_of("collective/mpi/fp64/kind=allreduce,bytes=12,inplace=0/threads=1")
                .find("bytes=12 must be a positive multiple of fp64's 8 bytes"),
            std::string::npos);
  EXPECT_NE(error_of("collective/mpi/fp32/kind=allreduce,bytes=0,inplace=0/threads=1").find("bytes=0 must be positive"),
            std::string::npos);
  EXPECT_NE(error_of("collective/mpi/fp32/kind=allreduce,bytes=16,inplace=2/threads=1").find("inplace=2 must be 0 or 1"),
            std::string::npos);
  // busbw = algbw x the factor of the ranks the result ran on.
  Result r;
  r.kase = parse_case("collective/mpi/fp32/kind=allreduce,bytes=4096,inplace=0/threads=1");
  r.gbps = 10;
  r.details["ranks"] = "4";
  auto m = op->derived_metrics(r);
  EXPECT_DOUBLE_EQ(m.at("algbw_gbps").value, 10);
  EXPECT_DOUBLE_EQ(m.at("busbw_gbps").value, 15);
}

// On one rank nothing crosses ranks: the time stays, GB/s and the bandwidth metrics go, a note
// says why. Against the same result on four ranks, whose rates are bytes / median by hand.
TEST(Collective, OneRankHasNoBandwidthButANote) {
  const OpDef* op = Registry::global().op("collective");
  ASSERT_NE(op, nullptr);
  auto measured = [&](const char* kase, const char* ranks) {
    Result r;
    r.kase = parse_case(kase);
    r.work = op->work(r.kase);
    r.samples = {2e-6, 2e-6, 2e-6};
    r.summary = summarize(r.samples);
    r.sustained = Sustained{.samples = r.samples, .summary = r.summary};
    r.details["ranks"] = ranks;
    derive_op_figures(*op, r);
    return r;
  };
  const char* out_of_place = "collective/mpi/fp32/kind=allreduce,bytes=4096,inplace=0/threads=1";
  Result four = measured(out_of_place, "4");
  EXPECT_DOUBLE_EQ(four.gbps, 4096 / 2e-6 * 1e-9);  // 2.048 GB/s
  EXPECT_DOUBLE_EQ(four.metrics.at("busbw_gbps").value, 2.048 * 2 * 3 / 4);
  EXPECT_FALSE(four.has_flag(kNoRateFlag));
  EXPECT_EQ(result_field("gbps").cell(four), "2.05");  // three significant digits below 10

  Result one = measured(out_of_place, "1");
  EXPECT_DOUBLE_EQ(one.summary.median, 2e-6);  // the time is kept
  EXPECT_EQ(one.gbps, 0);
  EXPECT_EQ(one.work.bytes(), 0);
  EXPECT_TRUE(one.metrics.empty());  // no algbw, no busbw
  EXPECT_FALSE(sustained_rate(one));
  EXPECT_FALSE(per_watt(one));
  EXPECT_TRUE(one.has_flag(kNoRateFlag));
  EXPECT_EQ(rate_note(one), "one rank: no data crosses ranks; the time is the call's overhead and a copy within the rank");
  EXPECT_EQ(result_field("gbps").cell(one), "-");
  EXPECT_EQ(result_field("pct_peak").cell(one), "-");
  EXPECT_NE(result_field("status").cell(one).find("ok, no-rate (one rank: no data crosses ranks"), std::string::npos);

  Result in_place = measured("collective/nccl/bf16/kind=allgather,bytes=4096,inplace=1/device=cuda:0", "1");
  EXPECT_EQ(rate_note(in_place),
            "one rank: no data crosses ranks, and in place nccl has nothing to do; the time is the call's overhead");
  EXPECT_EQ(in_place.gbps, 0);
}
