// stable_hash: FNV-1a 64's prime over an offset basis a digit short of FNV's (1469598103934665603,
// as the predictor first wrote it; kept, since its folds and cut file names depend on it). The
// expected values were computed apart, in Python, from that definition.
#include <gtest/gtest.h>

#include "util/text.hpp"

TEST(StableHash, IsFnv1aPrimeOverTheKeptOffset) {
  EXPECT_EQ(opmeter::stable_hash(""), 0x14650fb0739d0383ull);
  EXPECT_EQ(opmeter::stable_hash("a"), 0x44bd8ad473cd9906ull);
  EXPECT_EQ(opmeter::stable_hash("foobar"), 0x88fad7c0a8ff07f2ull);
}
