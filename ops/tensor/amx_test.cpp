// The shared AMX tile configuration: ldtilecfg reads it as raw bytes, so the builder's output is
// checked byte by byte against the layout in the Intel SDM (vol. 1, "Intel AMX"): byte 0 palette,
// 1 start_row, 2..15 reserved (0), 16..47 colsb of tiles 0..15 (little-endian 16-bit), 48..63 rows.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "ops/tensor/amx.hpp"

using namespace opmeter;

TEST(AmxTileConfig, BuilderPutsEachTilesShapeAtTheSdmOffsets) {
  const amx::TileConfig c = amx::tile_config({{16, 64}, {3, 64}, {16, 32}, {1, 4}, {7, 300}});
  std::array<unsigned char, 64> bytes;
  std::memcpy(bytes.data(), &c, 64);
  std::array<unsigned char, 64> want{};
  want[0] = 1;  // palette 1
  const int rows[] = {16, 3, 16, 1, 7}, colsb[] = {64, 64, 32, 4, 300};
  for (int t = 0; t < 5; ++t) {
    want[16 + 2 * t] = colsb[t] & 0xff;
    want[16 + 2 * t + 1] = colsb[t] >> 8;
    want[48 + t] = rows[t];
  }
  for (int i = 0; i < 64; ++i) EXPECT_EQ(bytes[i], want[i]) << "byte " << i;
  EXPECT_EQ(alignof(amx::TileConfig), 64u);
}
