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

// Which mma operand the weights are: B (every kernel) or A (int4 and int8 in the decode kernel at
// M <= 8; quant_gpu_pack.hpp has the layouts).
enum class Operand { b, a };

// The codes a recipe's weights take in the weight-only kernel; none for the baseline and the
// dynamic recipes (their activations are quantized too: cuBLASLt runs those).
std::optional<Codes> weight_only_codes(const quant::Recipe& r);

// The mma operand a recipe's weights take for `rows` rows of x: `asked` where a case names one
// (operand=a|b; operand_problem says whether it fits), else A for int4 and int8 at rows <= 8 (the
// decode kernel then multiplies 16 channels a warp, x as B: see quant_gpu_pack.hpp; int8 on
// integer tensor cores, x in two int8 limbs), else B.
Operand weight_operand(const quant::Recipe& r, std::size_t rows, std::optional<Operand> asked = std::nullopt);
inline constexpr std::size_t kMaxRowsWeightsA = 8;
// Why the weights cannot be `asked` for `rows` rows of x, "" where they can: B always; A takes
// int4 and int8 weight-only recipes at rows <= 8.
std::string operand_problem(const quant::Recipe& r, std::size_t rows, Operand asked);

// Device bytes of an out x hidden weight in the kernel's layout for `rows` rows of x: the packed
// codes (tiles of 8 channels, or 16 as A; k padded to the unit) and the scales (int8 / fp8: a
// float per padded channel; int4: a 32-bit scale-and-zero word per padded channel and group),
// the operand as weight_operand takes it. 0 where weight_only_codes has none.
std::size_t weight_only_device_bytes(const quant::Recipe& r, std::size_t out, std::size_t hidden, std::size_t rows,
                                     std::optional<Operand> asked = std::nullopt);

// Why `ksplit` splits of K (a case's ksplit=) do not fit a layer, "" where they do: every split
// needs a chunk of K (hidden in chunks of `chunk_k` for `tile_rows`-row tiles), and the partials
// take at most `max_splits` splits (`budget_mib` MiB).
std::string split_problem(int ksplit, std::size_t hidden, int chunk_k, int tile_rows, std::int64_t max_splits,
                          std::size_t budget_mib);

}  // namespace opmeter::linear::gpu_pack
