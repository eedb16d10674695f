#pragma once
// cuda_quant's kernels (quant_weight_only_sm80.cu, quant_dynamic.cu). x, y: rows x cols row-major in the
// case's 16-bit type; bias fp32; `act` a tensor::Act applied in fp32 (linear_act_math.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/linear/quant_gpu_plan.hpp"
#include "ops/tensor/kernels.hpp"
#include "opmeter/dtype.hpp"

namespace opmeter::linear::quant_cuda {

using Codes = gpu_pack::Codes;  // int8, fp8, int4 (ops/linear/quant_gpu_plan.hpp)

// The weight-only GEMM: y = act(x W^T + b), W in gpu_pack's layout, decoded in registers and
// multiplied with mma.sync m16n8k16 (fp32 accumulation). Blocks of 8 warps (8 n-tiles = 64
// channels) x `tile_rows` rows (16 or 64) x a range of k chunks; x's chunk staged in shared memory.
struct WeightOnlyArgs {
  const void* x = nullptr;
  std::int64_t M = 0, N = 0, K = 0;
  const std::uint8_t* codes = nullptr;     // packed (gpu_pack), 16-byte aligned
  std::int64_t n_tiles = 0, k_units = 0;   // of the packed layout
  bool weights_a = false;                  // int4 / int8 as the mma's A operand (gpu_pack::Operand::a), M <= 8
  const float* channel_scale = nullptr;    // int8 / fp8: padded_out floats
  const std::uint32_t* group_params = nullptr;  // int4: [padded_out][K / group]
  int group = 0;                           // int4
  const float* bias = nullptr;
  tensor::Act act = tensor::Act::none;
  void* y = nullptr;
  // Split K: ksplit x M x N floats, summed by launch_split_reduce (64-row tiles) or by the tile's
  // last block (16-row decode tiles).
  float* partial = nullptr;
  int ksplit = 1;
  // 16-row tiles with split K: one arrival counter per (n-block, row block), zero between launches;
  // the last split of a tile to arrive sums the partials (no reduce kernel).
  unsigned* counters = nullptr;
};
// Rows of x per block: 16 (decode, M <= 16) or 64 (the rest); k per chunk for that tiling.
int weight_only_chunk_k(int tile_rows);
// The split-K factor launch_weight_only uses for about `want` splits (every split gets chunks).
int weight_only_ksplit(std::int64_t K, int tile_rows, int want);
// Whether the kernel runs `group` (int4): a multiple of 16 that divides the chunk.
bool weight_only_takes_group(int group, int tile_rows);
// Blocks the kernel would launch before split-K (n blocks x row blocks) for n_tiles tiles of the
// packed layout.
std::int64_t weight_only_blocks(std::int64_t n_tiles, std::int64_t M, int tile_rows);
void launch_weight_only(DType d, Codes c, int tile_rows, const WeightOnlyArgs& a, cudaStream_t s);
// y = act(sum over splits of partial + bias), in d.
void launch_split_reduce(DType d, const float* partial, int ksplit, std::int64_t M, std::int64_t N, const float* bias,
                         tensor::Act act, void* y, cudaStream_t s);

// Dynamic recipes. prep: xf = x (or LayerNorm(x) with gamma / beta, in fp32) as floats, and each
// row's amax. quantize: codes of xf per row (scale rowmax / code_max, written to scales[m]) or
// per tensor (scales[0] from the max over rows), as quant::quantize_activations rounds them.
void launch_prep_rows(DType d, const void* x, const float* gamma, const float* beta, bool layernorm, std::int64_t M,
                      std::int64_t K, float* xf, float* rowmax, cudaStream_t s);
void launch_quantize(bool fp8, bool per_tensor, const float* xf, const float* rowmax, std::int64_t M, std::int64_t K,
                     std::uint8_t* codes, float* scales, cudaStream_t s);
// y[m, n] = act(acc[m, n] * row_scale[m] * col_scale[n] + bias[n]); acc s32 or fp32 or bf16;
// a null scale is 1.
enum class AccType { s32, f32, bf16 };
void launch_scale_epilogue(DType d, const void* acc, AccType at, const float* row_scale, const float* col_scale,
                           const float* bias, tensor::Act act, std::int64_t M, std::int64_t N, void* y, cudaStream_t s);

}  // namespace opmeter::linear::quant_cuda
