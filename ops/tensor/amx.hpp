// What every AMX tile kernel shares (peak_amx.cpp, quant_kernel_amx.cpp): the tile configuration
// that ldtilecfg loads, and whether this process may use the tiles. Plain C++: including this
// header needs no AMX compile flags; only the kernels' own files have them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace opmeter::amx {

// ldtilecfg's 64-byte operand, palette 1 (Intel SDM vol. 1, "Intel AMX"): byte 0 palette,
// 1 start_row, 16..47 each tile's bytes per row (16-bit), 48..63 each tile's rows.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

struct TileShape {
  std::size_t rows = 0, colsb = 0;  // colsb: bytes per row
};

// Tile t shaped as tiles[t]; tiles past the list stay unconfigured (0 x 0).
constexpr TileConfig tile_config(std::initializer_list<TileShape> tiles) {
  TileConfig c;
  int t = 0;
  for (const TileShape& s : tiles) {
    c.rows[t] = static_cast<std::uint8_t>(s.rows);
    c.colsb[t] = static_cast<std::uint16_t>(s.colsb);
    ++t;
  }
  return c;
}

// Whether the CPU has AMX-TILE with AMX-BF16 (or AMX-INT8) and Linux grants this process the tile
// state (asked once, as Linux requires before a process's first tile instruction).
bool bf16_usable();
bool int8_usable();

}  // namespace opmeter::amx
