// The collective op's arithmetic: nccl-tests' bus factors, the expected results and the cases.
#include "ops/collective/collective.hpp"

#include <gtest/gtest.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/result.hpp"

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
