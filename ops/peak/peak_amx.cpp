// AMX peak kernels (this file is compiled with -mamx-tile -mamx-bf16 -mamx-int8): tile dot
// products on tiles loaded once, so the loop has no memory traffic. kAmxAccumulators independent
// C tiles hide the tile unit's latency; A and B are loaded once. Per instruction (16 x 64-byte
// rows everywhere): tdpbf16ps does 16 x 16 x 32 bf16 multiply-adds, tdpbssd 16 x 16 x 64 int8 ones.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/peak/peak.hpp"
#include "ops/tensor/amx.hpp"

namespace opmeter::peak {
namespace {

// Tiles 0..5: accumulators (16 x 16 fp32 / int32); 6: A; 7: B. All 16 rows of 64 bytes.
constexpr amx::TileShape kTile{16, 64};
constexpr amx::TileConfig kConfig = amx::tile_config({kTile, kTile, kTile, kTile, kTile, kTile, kTile, kTile});
static_assert(kAmxAccumulators == 6, "the loops below name tiles 0..5");

// Sum of the accumulator tiles' elements, then the tile state handed back (other code, oneDNN
// and the int4 AMX kernel, loads its own configuration).
template <class T>
double sum_and_release() {
  alignas(64) T c[16 * 16];
  double total = 0;
  auto add = [&] {
    for (T v : c) total += static_cast<double>(v);
  };
  _tile_stored(0, c, 64); add();
  _tile_stored(1, c, 64); add();
  _tile_stored(2, c, 64); add();
  _tile_stored(3, c, 64); add();
  _tile_stored(4, c, 64); add();
  _tile_stored(5, c, 64); add();
  _tile_release();
  return total;
}

void load_operands(std::uint16_t a_word, std::uint16_t b_word) {
  _tile_loadconfig(&kConfig);
  alignas(64) std::uint16_t a[16 * 32], b[16 * 32];
  for (auto& w : a) w = a_word;
  for (auto& w : b) w = b_word;
  _tile_loadd(6, a, 64);
  _tile_loadd(7, b, 64);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3); _tile_zero(4); _tile_zero(5);
}

double bf16(std::int64_t iters) {
  // A = 1.0, B = 2^-10 (bf16): each element of C gains 32 x 2^-10 per instruction, exactly.
  load_operands(0x3f80, 0x3a80);
  for (std::int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 6, 7); _tile_dpbf16ps(1, 6, 7); _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7); _tile_dpbf16ps(4, 6, 7); _tile_dpbf16ps(5, 6, 7);
  }
  return sum_and_release<float>();
}

double int8(std::int64_t iters) {
  // Every byte 1: each element of C gains 64 per instruction.
  load_operands(0x0101, 0x0101);
  for (std::int64_t i = 0; i < iters; ++i) {
    _tile_dpbssd(0, 6, 7); _tile_dpbssd(1, 6, 7); _tile_dpbssd(2, 6, 7);
    _tile_dpbssd(3, 6, 7); _tile_dpbssd(4, 6, 7); _tile_dpbssd(5, 6, 7);
  }
  return sum_and_release<std::int32_t>();
}

}  // namespace

std::optional<Kernel> amx_kernel(DType d) {
  switch (d) {
    case DType::bf16: return Kernel{"amx_bf16", amx_ops_per_iter(d), bf16, [](std::int64_t n) { return amx_expected(DType::bf16, n); }};
    case DType::int8: return Kernel{"amx_int8", amx_ops_per_iter(d), int8, [](std::int64_t n) { return amx_expected(DType::int8, n); }};
    default: return std::nullopt;
  }
}

}  // namespace opmeter::peak
