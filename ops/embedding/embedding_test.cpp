// embedding: work model, params and MACs, parameter checks, the ids' range, the reference on a
// hand-made table, the spec's check, every CPU impl against the reference on odd shapes, the
// memory a huge table needs, the torch form, and on a GPU the CUDA impl.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/runner.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "ops/embedding/embedding.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"
#include "tests/torch_worker.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {
const char* const kShapes[] = {
    "batch=2,seq=3,hidden=37,vocab=11",   // odd rows: no 16-byte vectors
    "batch=1,seq=1,hidden=1,vocab=1",     // one id, one element
    "batch=3,seq=50,hidden=64,vocab=1000",  // whole 16-byte vectors, a group of threads per row
    "batch=1,seq=17,hidden=1028,vocab=7",   // fp32 rows of 16-byte vectors, bf16 rows not
};
}  // namespace

TEST(EmbeddingOp, WorkIsTheGatheredRowsAndModelCostTheTable) {
  const OpDef* op = Registry::global().op("embedding");
  ASSERT_NE(op, nullptr);
  auto c = parse_case("embedding/opmeter/bf16/batch=2,seq=3,hidden=8,vocab=100/threads=1");
  auto w = op->work(c);
  EXPECT_DOUBLE_EQ(w.flops, 0);
  EXPECT_DOUBLE_EQ(w.bytes_read, 6 * 4 + 6 * 8 * 2);  // ids, then the rows they name
  EXPECT_DOUBLE_EQ(w.bytes_written, 6 * 8 * 2);
  EXPECT_DOUBLE_EQ(op->footprint(c), 6 * 4 + 100 * 8 * 2 + 6 * 8 * 2);  // ids, the whole table, the output
  ASSERT_TRUE(op->model_cost);
  auto cost = op->model_cost(parse_case("embedding/opmeter/fp32/batch=1,seq=2048,hidden=9216,vocab=50272/threads=1"));
  EXPECT_DOUBLE_EQ(cost.params, 50272.0 * 9216);  // OPT-66B's token embedding
  EXPECT_DOUBLE_EQ(cost.macs, 0);
}

TEST(EmbeddingOp, BadParametersSayWhich) {
  try {
    validate_case(parse_case("embedding/opmeter/fp32/batch=1,seq=4,hidden=8,vocab=0/threads=1"));
    FAIL() << "vocab=0 accepted";
  } catch (const CaseError& e) {
    EXPECT_STREQ(e.what(), "embedding vocab=0 out of range: expected 1..16777216");
  }
  auto out = cli("run --case embedding/opmeter/fp32/batch=1,seq=4,hidden=0,vocab=8/threads=1");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("embedding hidden=0 out of range"), std::string::npos) << out.text;
}

TEST(EmbeddingOp, IdsCoverTheTableAndStayInIt) {
  embedding::EmbeddingOp spec;
  spec.bind(parse_case("embedding/opmeter/fp32/batch=4,seq=1000,hidden=2,vocab=5/threads=1"));
  auto in = spec.make_inputs(9);
  ASSERT_EQ(in[0].desc().elem, Elem::s32);
  std::vector<int> seen(5);
  for (std::size_t r = 0; r < 4000; ++r) {
    const double id = in[0][r];
    ASSERT_GE(id, 0);
    ASSERT_LT(id, 5);
    ++seen[std::size_t(id)];
  }
  for (int n : seen) EXPECT_GT(n, 600);  // uniform: about 800 each
}

TEST(EmbeddingOp, ReferenceIsTheNamedRowAndTheCheckWantsItExactly) {
  embedding::EmbeddingOp spec;
  spec.bind(parse_case("embedding/reference/fp32/batch=1,seq=3,hidden=2,vocab=4/threads=1"));
  auto in = spec.make_inputs(1);
  const std::int32_t ids[] = {2, 0, 2};
  for (std::size_t r = 0; r < 3; ++r) store(Elem::s32, in[0].data(), r, ids[r]);
  for (std::size_t i = 0; i < 8; ++i) store(Elem::f32, in[1].data(), i, 10.0 * double(i / 2) + double(i % 2));
  HostTensor out(spec.output());
  double ref[2], mag[2];
  for (std::size_t r = 0; r < 3; ++r) {
    spec.reference_row(in, r, ref, mag);
    EXPECT_EQ(ref[0], 10.0 * ids[r]) << r;
    EXPECT_EQ(ref[1], 10.0 * ids[r] + 1) << r;
    for (std::size_t c = 0; c < 2; ++c) store(Elem::f32, out.data(), r * 2 + c, ref[c]);
  }
  EXPECT_TRUE(spec.check(in, out, 1).ok);
  store(Elem::f32, out.data(), 5, 22.0);  // row 2 is table row 2 (20, 21): its second element off by one
  auto bad = spec.check(in, out, 1);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.detail.find("at [2,1]"), std::string::npos) << bad.detail;
  out.poison();
  EXPECT_NE(spec.check(in, out, 1).detail.find("not written"), std::string::npos);
}

TEST(EmbeddingOp, CpuImplsMatchTheReferenceOnOddShapes) {
  for (const char* impl : {"reference", "opmeter"})
    for (const char* dtype : {"fp32", "bf16"})
      for (const char* shape : kShapes) {
        auto kase = fmt::format("embedding/{}/{}/{}/threads=2", impl, dtype, shape);
        auto r = run_case(parse_case(kase), quick_options(2));
        ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        EXPECT_EQ(*r.max_error, 0) << kase;
      }
}

TEST(EmbeddingOp, ATableBeyondMemoryIsSkippedNotAllocated) {
  // 2^24 x 2^20 fp32 is 64 TiB: the case says it would not fit.
  auto r = run_case(parse_case("embedding/opmeter/fp32/batch=1,seq=4,hidden=1048576,vocab=16777216/threads=1"),
                    quick_options(2));
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("of memory"), std::string::npos) << r.reason;
}

namespace {
// A one-row lookup in a 2 MiB fp32 table: a call touches 260 bytes, so the runner rotates its
// most sets; 4096 copies of the table would take 8 GiB, more than it allows (4 GiB at most), so
// the sets share the fewest copies that hold twice the cache.
constexpr const char* kTinyLookup = "batch=1,seq=1,hidden=32,vocab=16384";

void expect_shared_table(const Result& r, const std::string& kase) {
  ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
  EXPECT_EQ(r.cache, "cold") << kase;
  const double table = 16384.0 * 32 * 4, touched = 4 + 2 * 32 * 4;
  const auto sets = std::min<std::size_t>(4096, std::size_t(std::ceil(2.0 * double(llc_bytes()) / touched)));
  const auto tables = std::max<std::size_t>(1, std::size_t(std::ceil(2.0 * double(llc_bytes()) / table)));
  EXPECT_EQ(r.copies, sets) << kase;
  const auto note = fmt::format("cold over {} input sets sharing {} cop{} of the 2 MiB of tables", sets, tables,
                                tables == 1 ? "y" : "ies");
  EXPECT_NE(r.details.at("cache").find(note), std::string::npos) << kase << ": " << r.details.at("cache");
}
}  // namespace

TEST(EmbeddingOp, ColdSetsDrawTheirOwnIdsAndShareATableTooLargeToCopyForEach) {
  for (const char* impl : {"reference", "opmeter"}) {
    auto kase = fmt::format("embedding/{}/fp32/{}/threads=1", impl, kTinyLookup);
    expect_shared_table(run_case(parse_case(kase), quick_options(2)), kase);
  }
}

TEST(EmbeddingOp, TorchFormMatchesTheReference) {
  REQUIRE_PYTHON_TORCH();
  opmeter::testing::TorchWorker env;
  for (const char* dtype : {"fp32", "bf16"}) {
    auto kase = fmt::format("embedding/torch/{}/{}/threads=1", dtype, kShapes[2]);
    auto r = run_case(parse_case(kase), quick_options(2));
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_EQ(*r.max_error, 0) << kase;
  }
  // Cold: the worker's sets take their own ids and share the tables as opmeter's do.
  auto kase = fmt::format("embedding/torch/fp32/{}/threads=1", kTinyLookup);
  expect_shared_table(run_case(parse_case(kase), quick_options(2)), kase);
}

TEST(EmbeddingOp, CudaImplIsKnownWithoutAGpu) {
  const ImplDef* def = Registry::global().impl("embedding", "cuda");
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->runs_on("cuda"));
  EXPECT_FALSE(def->runs_on("cpu"));
  EXPECT_EQ(def->dtypes, (std::vector<DType>{DType::fp32, DType::fp16, DType::bf16}));
}

TEST(EmbeddingOp, CudaImplIsCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  std::vector<std::string> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back("batch=8,seq=2048,hidden=4096,vocab=50272");  // more rows than the grid has blocks
  for (const char* dtype : {"fp32", "fp16", "bf16"})
    for (const auto& shape : shapes) {
      auto kase = fmt::format("embedding/cuda/{}/{}/device=cuda:0", dtype, shape);
      auto r = run_case(parse_case(kase), quick_options(2));
      ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
      EXPECT_EQ(*r.max_error, 0) << kase;
    }
  auto narrow = run_case(parse_case("embedding/cuda/bf16/batch=1,seq=17,hidden=1028,vocab=7/device=cuda:0"), quick_options(2));
  EXPECT_EQ(narrow.details.at("kernel"), "row gather, 2-byte copies");
  auto wide = run_case(parse_case("embedding/cuda/fp32/batch=1,seq=17,hidden=1028,vocab=7/device=cuda:0"), quick_options(2));
  EXPECT_EQ(wide.details.at("kernel"), "row gather, 16-byte copies");
}

TEST(EmbeddingOp, CudaColdGraphSetsDrawTheirOwnIdsAndShareTheTable) {
  // Graph mode does not flush L2: cold only over sets. 1024 rows of 8 KB read a call want 13-15
  // sets against a 50-60 MB L2, 20 dividing the graph; 20 copies of the 412 MB table exceed the
  // runner's 4 GiB at most, so the sets share one.
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  const char* kase = "embedding/cuda/bf16/batch=1,seq=1024,hidden=4096,vocab=50272/device=cuda:0,graph=20";
  auto r = run_case(parse_case(kase), quick_options(2));
  ASSERT_EQ(r.status, Status::ok) << r.reason;  // the check after timing too
  EXPECT_EQ(r.cache, "cold");
  EXPECT_EQ(r.copies, 20u);
  EXPECT_NE(r.details["cache"].find("cold over 20 input sets sharing 1 copy"), std::string::npos) << r.details["cache"];
}
