// The split of LayerNorm's dgamma / dbeta sums on CUDA (layernorm_grad_partition.hpp): walking the
// grid as the kernel does, every (row, column) is summed exactly once, into its own column's
// partial of the slab holding the row; and the grid fills a large GPU where the rows allow.
#include "ops/linear/layernorm_grad_partition.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace opmeter::linear {
namespace {
using P = LayerNormGradPartition;

// How many times the kernel's threads visit each (row, column), and whether each visit lands in
// the partial of the slab that holds the row.
void expect_each_cell_once(std::int64_t rows, std::int64_t hidden) {
  SCOPED_TRACE(testing::Message() << rows << " x " << hidden);
  const P p = layernorm_grad_partition(rows, hidden);
  ASSERT_GE(p.tiles * P::kTileColumns, hidden);
  ASSERT_LT((p.tiles - 1) * P::kTileColumns, hidden);  // no empty tile
  ASSERT_GE(p.slabs, 1);
  ASSERT_LE(p.slabs, P::kMaxSlabs);
  EXPECT_EQ(p.workspace_floats(), static_cast<std::size_t>(2 * p.slabs * hidden));
  std::vector<int> visits(static_cast<std::size_t>(rows * hidden), 0);
  for (std::int64_t tile = 0; tile < p.tiles; ++tile)
    for (std::int64_t slab = 0; slab < p.slabs; ++slab) {
      ASSERT_LT(p.slab_begin(slab), p.slab_end(slab)) << "empty slab " << slab;
      for (std::int64_t lane_y = 0; lane_y < P::kSlabLanes; ++lane_y)
        for (std::int64_t lane_x = 0; lane_x < P::kTileColumns; ++lane_x) {
          const std::int64_t k = p.column(tile, lane_x);
          if (k >= hidden) continue;
          for (std::int64_t r = p.slab_begin(slab) + lane_y; r < p.slab_end(slab); r += P::kSlabLanes) {
            ASSERT_EQ(r / p.slab_rows, slab);
            ++visits[static_cast<std::size_t>(r * hidden + k)];
          }
        }
    }
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < hidden; ++k)
      ASSERT_EQ(visits[static_cast<std::size_t>(r * hidden + k)], 1) << "row " << r << " column " << k;
}

TEST(LayerNormGradPartition, EveryRowAndColumnSummedOnce) {
  for (std::int64_t rows : {1, 7, 31, 33, 257, 1001, 4099})
    for (std::int64_t hidden : {1, 3, 31, 33, 65, 97}) expect_each_cell_once(rows, hidden);
}

TEST(LayerNormGradPartition, FillsTheGpuAtTrainingShapes) {
  // hidden 4096 x 8192 rows: one thread per column gave 16 blocks; the split gives ~kTargetBlocks.
  const P p = layernorm_grad_partition(8192, 4096);
  EXPECT_EQ(p.tiles, 128);
  EXPECT_EQ(p.slabs, 8);
  EXPECT_EQ(p.slab_rows, 1024);
  EXPECT_GE(p.tiles * p.slabs, P::kTargetBlocks);
  // Few rows: no slab shorter than kMinSlabRows (but a lone one).
  const P few = layernorm_grad_partition(40, 4096);
  EXPECT_EQ(few.slabs, 1);
  EXPECT_EQ(few.slab_rows, 40);
  // Narrow rows: many slabs, capped.
  const P narrow = layernorm_grad_partition(1 << 20, 64);
  EXPECT_EQ(narrow.slabs, P::kMaxSlabs);
  EXPECT_EQ(narrow.slab_rows * narrow.slabs, 1 << 20);
}

TEST(LayerNormGradPartition, EmptyShapesNeedNoWorkspace) {
  EXPECT_EQ(layernorm_backward_workspace_bytes(0, 4096), 0u);
  EXPECT_EQ(layernorm_backward_workspace_bytes(8, 0), 0u);
  EXPECT_EQ(layernorm_backward_workspace_bytes(8192, 4096), 2u * 8 * 4096 * sizeof(float));
}

TEST(LayerNormRowKernels, WarpPerRowAtSmallHiddenAndSixteenByteAccessesOnlyWhereAligned) {
  EXPECT_EQ(layernorm_row_threads(64, 256), 32);
  EXPECT_EQ(layernorm_row_threads(kWarpRowMaxHidden, 256), 32);
  EXPECT_EQ(layernorm_row_threads(4096, 256), 256);
  EXPECT_EQ(layernorm_vector_elems(4096, 2, true), 8);   // bf16 / fp16
  EXPECT_EQ(layernorm_vector_elems(4096, 4, true), 4);   // fp32
  EXPECT_EQ(layernorm_vector_elems(4096, 2, false), 1);  // a base pointer off 16 bytes
  EXPECT_EQ(layernorm_vector_elems(4100, 2, true), 1);   // rows after the first start off 16 bytes
  EXPECT_EQ(layernorm_vector_elems(4100, 4, true), 4);
  EXPECT_EQ(layernorm_vector_elems(33, 4, true), 1);
}

}  // namespace
}  // namespace opmeter::linear
