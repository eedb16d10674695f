#pragma once
// How LayerNorm's backward on CUDA (cuda/layernorm_train_kernel.cu) splits dgamma and dbeta, the
// sums over rows: blocks over (column tile x row slab) each write one fp32 partial per column and
// slab, then one thread per column adds its slabs in order (deterministic: no float atomics; one
// rounding per output). One thread per column over every row left a 132-SM GPU nearly idle
// (hidden 4096: 16 blocks). Pure and header-only: the kernel and a CPU test share it.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define OPMETER_LN_HD __host__ __device__
#else
#define OPMETER_LN_HD
#endif

namespace opmeter::linear {

struct LayerNormGradPartition {
  static constexpr std::int64_t kTileColumns = 32;     // one warp's columns (blockDim.x)
  static constexpr std::int64_t kSlabLanes = 8;        // warps per block, striding a slab's rows (blockDim.y)
  static constexpr std::int64_t kTargetBlocks = 1024;  // a few waves on today's largest GPUs
  static constexpr std::int64_t kMinSlabRows = 32;     // below this the partials cost more than they save
  static constexpr std::int64_t kMaxSlabs = 64;        // what the summing thread loops over

  std::int64_t rows = 0, hidden = 0;
  std::int64_t tiles = 0;      // ceil(hidden / kTileColumns): gridDim.x
  std::int64_t slabs = 0;      // gridDim.y; every slab non-empty
  std::int64_t slab_rows = 0;  // rows of each slab but maybe the last

  // Block (tile, slab), thread (lane_x, lane_y): column column(tile, lane_x) (none at or past
  // hidden), rows slab_begin(slab) + lane_y, then every kSlabLanes-th, below slab_end(slab).
  OPMETER_LN_HD std::int64_t column(std::int64_t tile, std::int64_t lane_x) const {
    return tile * kTileColumns + lane_x;
  }
  OPMETER_LN_HD std::int64_t slab_begin(std::int64_t slab) const { return slab * slab_rows; }
  OPMETER_LN_HD std::int64_t slab_end(std::int64_t slab) const {
    const std::int64_t end = (slab + 1) * slab_rows;
    return end < rows ? end : rows;
  }
  // fp32 partials: dgamma's slabs x hidden, then dbeta's.
  std::size_t workspace_floats() const { return static_cast<std::size_t>(2 * slabs * hidden); }
};

inline LayerNormGradPartition layernorm_grad_partition(std::int64_t rows, std::int64_t hidden) {
  using P = LayerNormGradPartition;
  P p;
  p.rows = std::max<std::int64_t>(rows, 0);
  p.hidden = std::max<std::int64_t>(hidden, 0);
  if (p.rows == 0 || p.hidden == 0) return p;
  p.tiles = (p.hidden + P::kTileColumns - 1) / P::kTileColumns;
  const std::int64_t wanted = (P::kTargetBlocks + p.tiles - 1) / p.tiles;
  const std::int64_t most = std::max<std::int64_t>(1, p.rows / P::kMinSlabRows);
  const std::int64_t slabs = std::clamp<std::int64_t>(wanted, 1, std::min(most, P::kMaxSlabs));
  p.slab_rows = (p.rows + slabs - 1) / slabs;
  p.slabs = (p.rows + p.slab_rows - 1) / p.slab_rows;  // rounding slab_rows up may leave fewer
  return p;
}

// dx (a reduction along each row): a warp per row up to kWarpRowMaxHidden columns (a block per
// row left most of its 256 threads idle at small hidden), a block per row beyond.
inline constexpr std::int64_t kWarpRowMaxHidden = 1024;
inline int layernorm_row_threads(std::int64_t hidden, int block_threads) {
  return hidden <= kWarpRowMaxHidden ? 32 : block_threads;
}
// Elements per access of the row kernels: 16 bytes where every row starts 16-byte aligned (hidden
// a multiple of the pack, base pointers aligned), else 1.
inline int layernorm_vector_elems(std::int64_t hidden, std::size_t elem_bytes, bool bases_aligned_16) {
  const auto pack = static_cast<std::int64_t>(16 / elem_bytes);
  return bases_aligned_16 && hidden % pack == 0 ? static_cast<int>(pack) : 1;
}

// Bytes of the workspace launch_layernorm_backward needs for rows x hidden.
inline std::size_t layernorm_backward_workspace_bytes(std::int64_t rows, std::int64_t hidden) {
  return layernorm_grad_partition(rows, hidden).workspace_floats() * sizeof(float);
}

}  // namespace opmeter::linear
