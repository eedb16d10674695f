#include "ops/linear/quant_gpu_plan.hpp"

#include "ops/linear/quant_gpu_pack.hpp"

namespace opmeter::linear::gpu_pack {

std::optional<Codes> weight_only_codes(const quant::Recipe& r) {
  if (!r.weight_only()) return std::nullopt;
  switch (r.weights) {
    case quant::WeightFormat::int4: return Codes::int4;
    case quant::WeightFormat::fp8: return Codes::fp8;
    case quant::WeightFormat::int8: return Codes::int8;
    default: return std::nullopt;
  }
}

std::size_t weight_only_device_bytes(const quant::Recipe& r, std::size_t out, std::size_t hidden) {
  if (!weight_only_codes(r)) return 0;
  const Layout l = layout_of(r.weights, out, hidden);
  if (r.weights == quant::WeightFormat::int4)
    return l.bytes() + l.padded_out() * (hidden / r.group) * sizeof(std::uint32_t);
  return l.bytes() + l.padded_out() * sizeof(float);
}

}  // namespace opmeter::linear::gpu_pack
