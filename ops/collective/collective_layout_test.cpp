// What the mpi and nccl collectives share (collective_layout.hpp): the block-split check and the
// poisoned fill, checked by hand without MPI or a GPU.
#include "ops/collective/collective_layout.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace opmeter::collective;

TEST(Collective, AMessageThatDoesNotSplitIntoBlocksIsRefusedSayingSo) {
  EXPECT_EQ(block_split_reason(Kind::allgather, 10, 3), "10 elements do not split into 3 equal blocks");
  EXPECT_EQ(block_split_reason(Kind::reduce_scatter, 7, 2), "7 elements do not split into 2 equal blocks");
  EXPECT_EQ(block_split_reason(Kind::alltoall, 5, 4), "5 elements do not split into 4 equal blocks");
  EXPECT_EQ(block_split_reason(Kind::alltoall, 12, 4), "");
  // The kinds without blocks take any size.
  for (Kind k : {Kind::allreduce, Kind::broadcast, Kind::sendrecv})
    EXPECT_EQ(block_split_reason(k, 10, 3), "") << kind_name(k);
}

namespace {
struct Buffers {
  std::vector<double> send, out;
};
Buffers filled(Kind k, int rank, int ranks, bool in_place) {
  const Layout l = device_layout(k, 6, ranks, rank, in_place);
  Buffers b{std::vector<double>(l.send, 99), std::vector<double>(l.buffer, 99)};
  fill_poisoned(k, l, rank, in_place, [&](std::size_t i, double v) { b.send.at(i) = v; },
                [&](std::size_t i, double v) { b.out.at(i) = v; });
  return b;
}
}  // namespace

TEST(Collective, TheFillPutsInputsWhereTheCallReadsThemAndPoisonsTheRest) {
  // Out of place: the inputs in the send buffer, every output element NaN.
  Buffers b = filled(Kind::allreduce, 1, 2, false);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(b.send[i], input_value(1, i));
    EXPECT_TRUE(std::isnan(b.out[i])) << i;
  }
  // In-place allgather on rank 1 of 3: its block (elements 2, 3) holds its input, the rest NaN.
  b = filled(Kind::allgather, 1, 3, true);
  for (std::size_t i = 0; i < 6; ++i)
    if (i == 2 || i == 3) EXPECT_EQ(b.out[i], input_value(1, i - 2)) << i;
    else EXPECT_TRUE(std::isnan(b.out[i])) << i;
  // In-place broadcast: the root's output holds its input; another rank's is all NaN.
  b = filled(Kind::broadcast, 0, 2, true);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(b.out[i], input_value(0, i)) << i;
  b = filled(Kind::broadcast, 1, 2, true);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(b.out[i])) << i;
}
