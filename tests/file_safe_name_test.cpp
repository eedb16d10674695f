// The one name cleaner: the replacement character is the caller's (rank folders use '-'), what it
// keeps and the never-hidden prefix are not.
#include <gtest/gtest.h>

#include "util/file_safe_name.hpp"

using namespace opmeter;

TEST(FileSafeName, ReplacementIsTheCallersKeptCharactersAreNot) {
  EXPECT_EQ(file_safe_name("node 7/cuda:1"), "node_7_cuda_1");
  EXPECT_EQ(file_safe_name("node 7/cuda:1", '-'), "node-7-cuda-1");
  EXPECT_EQ(file_safe_name("a.b-c_d=e", '-'), "a.b-c_d=e");
  EXPECT_EQ(file_safe_name(".hidden", '-'), "_.hidden");
  EXPECT_EQ(file_safe_name("", '-'), "_");
}
