#pragma once
// What the CUDA weight-only kernel (quant_weight_only_sm80.cu) makes of a recipe, shared by every
// CUDA impl that runs it (linear cuda_quant, transformer_block cuda_quant). Pure: tested on any machine.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ops/linear/quant/recipe.hpp"

namespace opmeter::linear::gpu_pack {

// The codes the kernel decodes in registers.
enum class Codes { int8, fp8, int4 };

// The codes a recipe's weights take in the weight-only kernel; none for the baseline and the
// dynamic recipes (their activations are quantized too: cuBLASLt runs those).
std::optional<Codes> weight_only_codes(const quant::Recipe& r);

// Device bytes of an out x hidden weight in the kernel's layout: the packed codes (n-tiles of 8
// channels, k padded to the unit) and the scales (int8 / fp8: a float per padded channel; int4:
// a 32-bit scale-and-zero word per padded channel and group). 0 where weight_only_codes has none.
std::size_t weight_only_device_bytes(const quant::Recipe& r, std::size_t out, std::size_t hidden);

// Why `ksplit` splits of K (a case's ksplit=) do not fit a layer, "" where they do: every split
// needs a chunk of K (hidden in chunks of `chunk_k` for `tile_rows`-row tiles), and the partials
// take at most `max_splits` splits (`budget_mib` MiB).
std::string split_problem(int ksplit, std::size_t hidden, int chunk_k, int tile_rows, std::int64_t max_splits,
                          std::size_t budget_mib);

}  // namespace opmeter::linear::gpu_pack
