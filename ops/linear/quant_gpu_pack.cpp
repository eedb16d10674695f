// Repacking quantized weights into the mma fragment order of cuda_quant's kernel (see the header).
#include "ops/linear/quant_gpu_pack.hpp"

#include <stdexcept>

#include "opmeter/dtype.hpp"

namespace opmeter::linear::gpu_pack {
namespace {
std::uint16_t bits16(Elem e, float v) { return e == Elem::bf16 ? to_bf16(v) : to_fp16(v); }
}  // namespace

Layout layout_of(quant::WeightFormat format, std::size_t out, std::size_t hidden, Operand operand) {
  if (format == quant::WeightFormat::full) throw std::invalid_argument("gpu_pack: the baseline has no quantized layout");
  if (operand == Operand::a && format == quant::WeightFormat::fp8)
    throw std::invalid_argument("gpu_pack: fp8 weights are not laid out as the mma's A operand");
  Layout l;
  l.format = format;
  l.operand = operand;
  l.out = out;
  l.hidden = hidden;
  const bool int4 = format == quant::WeightFormat::int4;
  l.unit_k = operand == Operand::b ? (int4 ? 128 : 64) : (int4 ? 64 : kStepK8);
  l.tile_n = operand == Operand::a ? kTileNA : kTileN;
  l.n_tiles = (out + l.tile_n - 1) / l.tile_n;
  l.k_units = (hidden + l.unit_k - 1) / l.unit_k;
  return l;
}

std::size_t Layout::byte_of(std::size_t j, std::size_t k, unsigned* shift) const {
  const std::size_t nt = j / tile_n, c = j % tile_n, g = c % kTileN, ku = k / unit_k, kk = k % unit_k;
  const std::size_t s = kk / kStepK, r = kk % kStepK;
  const std::size_t t = (r % 8) / 2, upper = r / 8, odd = r % 2;  // k = 16 s + 2 t + 8 upper + odd
  const std::size_t lane_base = (nt * k_units + ku) * kUnitBytes + (g * 4 + t) * 16;
  if (operand == Operand::a && format == quant::WeightFormat::int8) {
    // m16n8k32: a_i = (channel g + 8 (i % 2), k 4t' .. 4t' + 3 (+ 16 for i >= 2)), t' = (kk % 16) / 4
    const std::size_t t8 = (kk % 16) / 4, word = c / kTileN + 2 * (kk / 16);
    *shift = 0;
    return (nt * k_units + ku) * kUnitBytes + (g * 4 + t8) * 16 + word * 4 + kk % 4;
  }
  if (operand == Operand::a) {  // fragment i = (channel g + 8 (i % 2), k 2t + 8 (i / 2)): word s
    const std::size_t nibble = c / kTileN + 2 * upper + 4 * odd;
    *shift = static_cast<unsigned>(4 * (nibble % 2));
    return lane_base + s * 4 + nibble / 2;
  }
  if (format != quant::WeightFormat::int4) {
    *shift = 0;
    return lane_base + s * 4 + upper * 2 + odd;
  }
  const std::size_t nibble = (s % 2) * 2 + upper + 4 * odd;  // within word s / 2
  *shift = static_cast<unsigned>(4 * (nibble % 2));
  return lane_base + (s / 2) * 4 + nibble / 2;
}

std::vector<std::uint8_t> pack_codes(const Layout& l, const std::vector<std::uint8_t>& canonical) {
  const bool int4 = l.format == quant::WeightFormat::int4, offset128 = l.int8_offset();
  const std::size_t n = l.out * l.hidden;
  if (canonical.size() != (int4 ? (n + 1) / 2 : n)) throw std::invalid_argument("gpu_pack: codes do not match the shape");
  std::vector<std::uint8_t> packed(l.bytes(), 0);
  for (std::size_t j = 0; j < l.out; ++j)
    for (std::size_t k = 0; k < l.hidden; ++k) {
      const std::size_t i = j * l.hidden + k;
      unsigned shift = 0;
      const std::size_t b = l.byte_of(j, k, &shift);
      if (int4) {
        packed[b] |= static_cast<std::uint8_t>(((canonical[i / 2] >> (4 * (i % 2))) & 15) << shift);
      } else {
        packed[b] = offset128 ? static_cast<std::uint8_t>(canonical[i] ^ 0x80) : canonical[i];
      }
    }
  return packed;
}

std::vector<std::uint8_t> unpack_codes(const Layout& l, const std::vector<std::uint8_t>& packed) {
  const bool int4 = l.format == quant::WeightFormat::int4, offset128 = l.int8_offset();
  if (packed.size() != l.bytes()) throw std::invalid_argument("gpu_pack: packed codes do not match the layout");
  const std::size_t n = l.out * l.hidden;
  std::vector<std::uint8_t> canonical(int4 ? (n + 1) / 2 : n, 0);
  for (std::size_t j = 0; j < l.out; ++j)
    for (std::size_t k = 0; k < l.hidden; ++k) {
      const std::size_t i = j * l.hidden + k;
      unsigned shift = 0;
      const std::uint8_t v = packed[l.byte_of(j, k, &shift)];
      if (int4)
        canonical[i / 2] |= static_cast<std::uint8_t>(((v >> shift) & 15) << (4 * (i % 2)));
      else canonical[i] = offset128 ? static_cast<std::uint8_t>(v ^ 0x80) : v;
    }
  return canonical;
}

std::vector<std::uint32_t> pack_group_params(const quant::QuantizedWeights& q, std::size_t padded_out, Elem scale_elem) {
  if (scale_elem != Elem::bf16 && scale_elem != Elem::f16)
    throw std::invalid_argument("gpu_pack: int4 scales are stored in bf16 or f16");
  const std::size_t groups = q.groups_per_row();
  if (q.scales.size() != q.out * groups || q.zeros.size() != q.out * groups)
    throw std::invalid_argument("gpu_pack: int4 scales / zeros do not match the shape");
  std::vector<std::uint32_t> words(padded_out * groups, 0);
  for (std::size_t j = 0; j < q.out; ++j)
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t i = j * groups + g;
      words[i] = std::uint32_t{bits16(scale_elem, q.scales[i])} | (std::uint32_t{bits16(scale_elem, q.zeros[i])} << 16);
    }
  return words;
}

std::vector<float> pack_channel_scales(const quant::QuantizedWeights& q, std::size_t padded_out) {
  std::vector<float> s(padded_out, 0.f);
  for (std::size_t j = 0; j < q.out; ++j) s[j] = q.scales.size() == 1 ? q.scales[0] : q.scales.at(j);
  return s;
}

}  // namespace opmeter::linear::gpu_pack
