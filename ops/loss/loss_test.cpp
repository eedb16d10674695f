// The loss ops' work models, counted by hand from what each computes (loss.hpp).
#include <gtest/gtest.h>

#include "opmeter/registry.hpp"
#include "tests/work_of.hpp"

using namespace opmeter;

namespace {

Work work_of(const char* kase) { return opmeter::testing::work_of_case(kase); }

}  // namespace

// batch 2 x seq 3 = 6 rows of hidden 5: n = 30 elements. The output is one fp32 loss (4 B).
// Flops per element; the few per-row or per-call operations (the final division by n, each row's
// log, + max and - logit[label]) are O(rows) and not counted:
//   mse            pred - target (1), squared (1), summed (1)                               3
//   cross_entropy  row max (1 compare), x - max (1), exp (1), summed (1)                    4
TEST(LossOps, WorkIsCountedByHand) {
  const double n = 30, rows = 6;
  auto mse = work_of("mse/opmeter/fp32/batch=2,seq=3,hidden=5/threads=1");
  EXPECT_DOUBLE_EQ(mse.flops, 3 * n);
  EXPECT_DOUBLE_EQ(mse.bytes_read, 2 * n * 4);  // pred and target
  EXPECT_DOUBLE_EQ(mse.bytes_written, 4);       // the fp32 mean
  auto mse_bf16 = work_of("mse/opmeter/bf16/batch=2,seq=3,hidden=5/threads=1");
  EXPECT_DOUBLE_EQ(mse_bf16.bytes_read, 2 * n * 2);
  EXPECT_DOUBLE_EQ(mse_bf16.bytes_written, 4);  // the loss stays fp32

  auto ce = work_of("cross_entropy/opmeter/fp32/batch=2,seq=3,hidden=5/threads=1");
  EXPECT_DOUBLE_EQ(ce.flops, 4 * n);
  EXPECT_DOUBLE_EQ(ce.bytes_read, n * 4 + rows * 4);  // logits, then one int32 label per row
  EXPECT_DOUBLE_EQ(ce.bytes_written, 4);
  auto ce_bf16 = work_of("cross_entropy/opmeter/bf16/batch=2,seq=3,hidden=5/threads=1");
  EXPECT_DOUBLE_EQ(ce_bf16.bytes_read, n * 2 + rows * 4);  // the labels stay int32
}
