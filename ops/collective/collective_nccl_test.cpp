// The collective op's `nccl` impl: what runs without a GPU (its declaration, the device buffers
// per rank, the dtypes whose sums stay exact) and, on a GPU, every kind alone on one rank.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine/runner.hpp"
#include "opmeter/registry.hpp"
#include "ops/collective/collective_layout.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using namespace opmeter::collective;

TEST(CollectiveNccl, IsDeclaredOnCudaWithSixteenBitTypes) {
  const ImplDef* def = Registry::global().impl("collective", "nccl");
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->runs_on("cuda"));
  EXPECT_EQ(def->dtypes, (std::vector<DType>{DType::fp32, DType::fp64, DType::fp16, DType::bf16}));
  // bytes split into whole 2-byte elements (the op once took every dtype as 4 bytes wide).
  const OpDef* op = Registry::global().op("collective");
  EXPECT_EQ(elements(parse_case("collective/nccl/bf16/kind=allreduce,bytes=4096,inplace=0/device=cuda:0")), 2048u);
  EXPECT_NO_THROW(op->validate(parse_case("collective/nccl/fp16/kind=allreduce,bytes=6,inplace=0/device=cuda:0")));
  // NCCL has no in-place alltoall or sendrecv: planned as skipped, with the reason, on any machine.
  auto s = def->supports(parse_case("collective/nccl/fp32/kind=alltoall,bytes=4096,inplace=1/device=cuda:0"));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("in-place"), std::string::npos) << s.reason;
  EXPECT_TRUE(def->supports(parse_case("collective/nccl/fp32/kind=broadcast,bytes=4096,inplace=1/device=cuda:0")).ok);
}

TEST(CollectiveNccl, BuffersPerRankAreNcclTestsLayout) {
  // 12 elements on 3 ranks: blocks of 4. Counted by hand from NCCL's in-place rules
  // (allgather: sendbuff = recvbuff + rank * count; reduce_scatter: recvbuff = sendbuff + rank * count).
  Layout ag = device_layout(Kind::allgather, 12, 3, 2, true);
  EXPECT_EQ(ag.send, 4u);
  EXPECT_EQ(ag.recv, 12u);
  EXPECT_EQ(ag.buffer, 12u);
  EXPECT_EQ(ag.send_offset, 8u);
  EXPECT_EQ(ag.recv_offset, 0u);
  EXPECT_EQ(device_layout(Kind::allgather, 12, 3, 2, false).send_offset, 0u);
  Layout rs = device_layout(Kind::reduce_scatter, 12, 3, 1, true);
  EXPECT_EQ(rs.send, 12u);
  EXPECT_EQ(rs.recv, 4u);
  EXPECT_EQ(rs.buffer, 12u);
  EXPECT_EQ(rs.recv_offset, 4u);
  Layout rs_out = device_layout(Kind::reduce_scatter, 12, 3, 1, false);
  EXPECT_EQ(rs_out.buffer, 4u);
  EXPECT_EQ(rs_out.recv_offset, 0u);
  for (Kind k : {Kind::allreduce, Kind::alltoall, Kind::broadcast, Kind::sendrecv}) {
    Layout l = device_layout(k, 12, 3, 2, false);
    EXPECT_EQ(l.send, 12u) << kind_name(k);
    EXPECT_EQ(l.recv, 12u) << kind_name(k);
    EXPECT_EQ(l.buffer, 12u) << kind_name(k);
    EXPECT_EQ(l.send_offset + l.recv_offset, 0u) << kind_name(k);
  }
  // Every result element lies inside the buffer, for every rank of every kind.
  for (int n : {1, 2, 3, 8})
    for (int rank = 0; rank < n; ++rank)
      for (int k = 0; k < 6; ++k)
        for (bool in_place : {false, true}) {
          Layout l = device_layout(static_cast<Kind>(k), 24, n, rank, in_place);
          EXPECT_LE(l.recv_offset + l.recv, l.buffer);
          if (in_place) {
            EXPECT_LE(l.send_offset + l.send, l.buffer);
          }
        }
}

TEST(CollectiveNccl, SixteenBitSumsAreExactOnlyWhileTheIntegersFit) {
  // Partial sums of inputs in [-5, 5] reach 5n: bf16 holds integers exactly up to 2^8, fp16 2^11.
  EXPECT_EQ(inexact_sum_reason(Kind::allreduce, DType::bf16, 51), "");   // 255
  EXPECT_NE(inexact_sum_reason(Kind::allreduce, DType::bf16, 52), "");   // 260
  EXPECT_NE(inexact_sum_reason(Kind::reduce_scatter, DType::bf16, 52), "");
  EXPECT_EQ(inexact_sum_reason(Kind::allgather, DType::bf16, 1000), "");  // moved, never summed
  EXPECT_EQ(inexact_sum_reason(Kind::allreduce, DType::fp16, 409), "");  // 2045
  EXPECT_NE(inexact_sum_reason(Kind::allreduce, DType::fp16, 410), "");  // 2050
  EXPECT_EQ(inexact_sum_reason(Kind::allreduce, DType::fp32, 4096), "");
  // The same limits, found by rounding the largest sum itself.
  EXPECT_EQ(from_bf16(to_bf16(255.f)), 255.f);
  EXPECT_NE(from_bf16(to_bf16(257.f)), 257.f);
  EXPECT_EQ(from_fp16(to_fp16(2047.f)), 2047.f);
  EXPECT_NE(from_fp16(to_fp16(2049.f)), 2049.f);
}

// On a GPU, alone (one rank): every kind in every dtype, in place and not, passes its check
// before and after timing and reports its time, but no GB/s (nothing crosses ranks: a note says
// so); one NCCL communicator serves every case.
TEST(CollectiveNccl, EveryKindRunsAloneOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  int comms_made = 0;
  for (const char* dtype : {"fp32", "fp64", "fp16", "bf16"})
    for (const char* kind : {"allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"})
      for (int in_place : {0, 1}) {
        auto kase = fmt::format("collective/nccl/{}/kind={},bytes=4096,inplace={}/device=cuda:0", dtype, kind, in_place);
        Result r = run_case(parse_case(kase), opmeter::testing::quick_options(2));
        const bool no_in_place = in_place && (std::string(kind) == "alltoall" || std::string(kind) == "sendrecv");
        if (no_in_place) {
          EXPECT_EQ(r.status, Status::skipped) << kase;
          continue;
        }
        if (r.status == Status::skipped && r.reason.find("NCCL does not load") != std::string::npos)
          GTEST_SKIP() << r.reason;
        ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        EXPECT_EQ(*r.max_error, 0) << kase;
        EXPECT_GT(r.summary.median, 0) << kase;
        EXPECT_EQ(r.gbps, 0) << kase;
        EXPECT_TRUE(r.has_flag(kNoRateFlag)) << kase;
        EXPECT_EQ(rate_note(r).rfind("one rank: no data crosses ranks", 0), 0u) << kase << ": " << rate_note(r);
        EXPECT_EQ(r.details.at("ranks"), "1") << kase;
        comms_made += r.details.at("nccl_comm") == "made for this case";
      }
  EXPECT_LE(comms_made, 1);  // the first case's (none where an earlier test made it), kept since
}
