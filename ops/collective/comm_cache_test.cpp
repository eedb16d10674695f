// The communicator cache of the nccl impl, with integers for communicators.
#include "ops/collective/comm_cache.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

using namespace opmeter::collective;

namespace {
struct Released {
  int comm;
  bool broken;
  bool operator==(const Released&) const = default;
};
}  // namespace

TEST(CommCache, MadeOncePerDeviceReusedAndReleasedAtTheEnd) {
  std::vector<Released> released;
  int next = 100;
  auto make = [&] { return next++; };
  auto alone = [](bool lacking) { return lacking; };  // one rank: the vote is its own
  {
    CommCache<int> cache([&](int c, bool broken) { released.push_back({c, broken}); });
    EXPECT_EQ(cache.get(0, alone, make), 100);
    EXPECT_EQ(cache.get(0, alone, make), 100);  // the second case reuses it
    EXPECT_EQ(cache.get(0, alone, make), 100);
    EXPECT_EQ(cache.get(1, alone, make), 101);  // another device, another communicator
    EXPECT_EQ(cache.made(), 2u);
    EXPECT_TRUE(released.empty());
    // After an error: aborted, and the next case makes a new one.
    cache.drop(0);
    EXPECT_EQ(released, (std::vector<Released>{{100, true}}));
    EXPECT_EQ(cache.get(0, alone, make), 102);
    EXPECT_EQ(cache.held(), 2u);
  }
  // At the end every one left is destroyed (not aborted), once, by device.
  ASSERT_EQ(released.size(), 3u);
  EXPECT_EQ(released[1], (Released{102, false}));
  EXPECT_EQ(released[2], (Released{101, false}));
}

TEST(CommCache, WhenAnyRankLacksOneEveryRankMakesANewOne) {
  std::vector<Released> released;
  int next = 0;
  CommCache<int> cache([&](int c, bool broken) { released.push_back({c, broken}); });
  auto make = [&] { return next++; };
  EXPECT_EQ(cache.get(0, [](bool lacking) { return lacking; }, make), 0);
  // Another rank lost its communicator (dropped after an error): this one replaces its own too,
  // so that every rank calls the collective making of the new one.
  std::vector<bool> votes;
  auto other_lacks = [&](bool lacking) {
    votes.push_back(lacking);
    return true;
  };
  EXPECT_EQ(cache.get(0, other_lacks, make), 1);
  EXPECT_EQ(votes, (std::vector<bool>{false}));  // this rank voted that it had one
  EXPECT_EQ(released, (std::vector<Released>{{0, false}}));
  // A make that fails caches nothing: the next case tries again.
  EXPECT_THROW(cache.get(1, [](bool l) { return l; }, []() -> int { throw std::runtime_error("ncclCommInitRank"); }),
               std::runtime_error);
  EXPECT_EQ(cache.held(), 1u);
  EXPECT_EQ(cache.get(1, [](bool l) { return l; }, make), 2);
}
