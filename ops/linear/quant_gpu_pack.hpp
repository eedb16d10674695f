#pragma once
// The GPU layout of quantized weights (cuda_quant's weight-only kernel), repacked on the host
// from the canonical layout (quant/quantize.hpp). Pure functions: tested on any machine.
//
// The kernel multiplies with mma.sync m16n8k16, the weights as its B operand (16 k x 8 output
// channels). Lane l = 4 g + t of a warp holds, per k16 step, channel g's weights at k = 2t, 2t+1
// (register b0) and 2t+8, 2t+9 (b1). A "unit" is one 16-byte load per lane, 512 bytes per warp,
// covering 8 channels (an n-tile) and:
//   int8 / fp8: 4 k16 steps (64 k); step s in bytes 4s..4s+3 = k 2t, 2t+1, 2t+8, 2t+9.
//     int8 codes are stored + 128 (unsigned), so the kernel turns them into floats with one
//     exponent trick; fp8 bytes as they are.
//   int4: 8 k16 steps (128 k); step s in 32-bit word s/2, nibbles base, base+4 (k 2t, 2t+1) and
//     base+1, base+5 (k 2t+8, 2t+9), base = 2 (s % 2): masking a word with 0x000F000F gives two
//     values in the halves of a register, as b0 / b1 want them.
// Units are stored n-tile major: unit (nt, ku) at byte (nt * k_units + ku) * 512, lane l's 16
// bytes at + 16 l. Channels past `out` and k past `hidden` are zero.
//
// int4 weights as the A operand (Operand::a, the decode kernel at M <= 8): the mma's 16 rows are
// 16 output channels and x is B (8 columns, one per row of x), so one mma takes 256 weights where
// the B form takes 128 and 15 of its 16 A rows are zeros at M = 1. Lane 4g + t holds, per k16
// step, the A fragment a0 = (channel g, k 2t, 2t+1), a1 = (channel g+8, k 2t, 2t+1), a2 =
// (channel g, k 2t+8, 2t+9), a3 = (channel g+8, k 2t+8, 2t+9): eight nibbles, one 32-bit word,
// fragment i in nibbles i (even k) and i + 4 (odd k), so that (word >> 4i) & 0x000F000F is a_i.
// A unit is 16 channels (an m-tile) x 4 steps (64 k), word s = step s.
//
// int8 weights as the A operand of the integer mma m16n8k32 (Operand::a, the decode kernel at
// M <= 8, x in two int8 limbs: quant_gpu_limbs.hpp): a unit is one step, 16 channels x 32 k, and
// lane 4g + t's 16 bytes are the fragment as it is: a0 = (channel g, k 4t .. 4t + 3), a1 =
// (channel g + 8, the same k), a2 = (channel g, k 16 + 4t .. 16 + 4t + 3), a3 = (channel g + 8,
// those k). Codes are stored as they are (int8), not offset.
// int4 group parameters: one 32-bit word per (channel, group), [padded_out][groups]: low 16 bits
// the scale, high 16 bits the zero, both in the activations' 16-bit type (they are exact there).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/linear/quant/quantize.hpp"
#include "ops/linear/quant_gpu_plan.hpp"

namespace opmeter::linear::gpu_pack {

inline constexpr std::size_t kTileN = 8;        // output channels per n-tile
inline constexpr std::size_t kUnitBytes = 512;  // 32 lanes x 16 bytes
inline constexpr std::size_t kStepK = 16;       // k per mma step
inline constexpr std::size_t kTileNA = 16;      // output channels per tile where the weights are A
inline constexpr std::size_t kStepK8 = 32;      // k per integer mma step (int8 as A)

struct Layout {
  quant::WeightFormat format = quant::WeightFormat::int8;
  Operand operand = Operand::b;
  std::size_t out = 0, hidden = 0;
  std::size_t unit_k = 64;      // k per unit: 64 (8-bit codes as B, int4 as A), 128 (int4 as B), 32 (int8 as A)
  std::size_t tile_n = kTileN;  // output channels per tile: 8, or 16 as A
  std::size_t n_tiles = 0, k_units = 0;
  std::size_t bytes() const { return n_tiles * k_units * kUnitBytes; }
  std::size_t padded_out() const { return n_tiles * tile_n; }
  // int8 codes stored + 128 (the B form, for the bf16 decode); as A they are stored as they are.
  bool int8_offset() const { return format == quant::WeightFormat::int8 && operand == Operand::b; }
  // Byte of the packed codes holding weight (j, k), and the nibble's shift (int4; 0 otherwise).
  std::size_t byte_of(std::size_t j, std::size_t k, unsigned* shift) const;
};
// Layout of an out x hidden weight in `format` (int8, fp8 or int4); Operand::a takes int8 and int4.
Layout layout_of(quant::WeightFormat format, std::size_t out, std::size_t hidden, Operand operand = Operand::b);

// Canonical codes (QuantizedWeights::codes) to the kernel's layout, and back.
std::vector<std::uint8_t> pack_codes(const Layout& l, const std::vector<std::uint8_t>& canonical);
std::vector<std::uint8_t> unpack_codes(const Layout& l, const std::vector<std::uint8_t>& packed);

// int4 scales and zeros as [padded_out][groups] words (scale low, zero high) in `scale_elem`
// (f16 or bf16); zero words for the padded channels.
std::vector<std::uint32_t> pack_group_params(const quant::QuantizedWeights& q, std::size_t padded_out, Elem scale_elem);
// Per-channel scales (int8, fp8; a per-tensor scale repeated) as floats, padded with zeros.
std::vector<float> pack_channel_scales(const quant::QuantizedWeights& q, std::size_t padded_out);

}  // namespace opmeter::linear::gpu_pack
