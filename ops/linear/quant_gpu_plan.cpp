#include "ops/linear/quant_gpu_plan.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ops/linear/quant_gpu_decode.hpp"
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

Operand weight_operand(const quant::Recipe& r, std::size_t rows, std::optional<Operand> asked) {
  if (asked) return *asked;
  return operand_problem(r, rows, Operand::a).empty() ? Operand::a : Operand::b;
}

std::string operand_problem(const quant::Recipe& r, std::size_t rows, Operand asked) {
  if (asked == Operand::b) return "";
  const bool a_form = r.weights == quant::WeightFormat::int4 || r.weights == quant::WeightFormat::int8;
  if (!a_form || !r.weight_only())
    return fmt::format("operand=a: the decode kernel takes int4 and int8 weight-only recipes as the A operand, not {}",
                       r.name);
  if (rows > kMaxRowsWeightsA)
    return fmt::format("operand=a: the decode kernel takes the weights as the A operand at {} rows or fewer, not {}",
                       kMaxRowsWeightsA, rows);
  return "";
}

std::size_t weight_only_device_bytes(const quant::Recipe& r, std::size_t out, std::size_t hidden, std::size_t rows,
                                     std::optional<Operand> asked) {
  if (!weight_only_codes(r)) return 0;
  const Layout l = layout_of(r.weights, out, hidden, weight_operand(r, rows, asked));
  if (r.weights == quant::WeightFormat::int4)
    return l.bytes() + l.padded_out() * (hidden / r.group) * sizeof(std::uint32_t);
  return l.bytes() + l.padded_out() * sizeof(float);
}

std::string split_problem(int ksplit, std::size_t hidden, int chunk_k, int tile_rows, std::int64_t max_splits,
                          std::size_t budget_mib) {
  const std::int64_t n_chunks = gpu_decode::chunk_count(static_cast<std::int64_t>(hidden), chunk_k);
  if (ksplit > max_splits)
    return fmt::format("ksplit={}: the partials of more than {} splits exceed the kernel's {} MiB for them", ksplit,
                       max_splits, budget_mib);
  if (gpu_decode::splits_evenly(n_chunks, ksplit)) return "";
  std::vector<std::int64_t> fit;
  for (std::int64_t ks = 1; ks <= std::min(n_chunks, max_splits); ++ks)
    if (gpu_decode::splits_evenly(n_chunks, ks)) fit.push_back(ks);
  return fmt::format(
      "ksplit={} leaves a split without K: hidden={} is {} chunk{} of {} for {}-row tiles, which split {} way{}",
      ksplit, hidden, n_chunks, n_chunks == 1 ? "" : "s", chunk_k, tile_rows, fmt::join(fit, ", "),
      fit.size() == 1 ? "" : "s");
}

}  // namespace opmeter::linear::gpu_pack
