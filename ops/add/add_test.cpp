// The add op: work model, parameter checks, the shared spec's check (right and wrong outputs),
// the CPU impl end to end, and on a GPU the CUDA impl.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/add/add.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {


// The spec's inputs for a case and their correct sum, as a CPU impl would leave them.
struct Computed {
  add::AddSpec spec;
  HostTensors in;
  HostTensor out;
};
Computed computed(const std::string& kase, std::uint64_t seed) {
  add::AddSpec spec;
  spec.bind(parse_case(kase));
  auto in = spec.make_inputs(seed);
  HostTensor out(spec.output());
  for (std::size_t i = 0; i < out.desc().count; ++i) store(out.desc().elem, out.data(), i, in[0][i] + in[1][i]);
  return {std::move(spec), std::move(in), std::move(out)};
}

}  // namespace

TEST(AddOp, WorkIsOneFlopAndThreeTransfersPerElement) {
  const OpDef* op = Registry::global().op("add");
  ASSERT_NE(op, nullptr);
  auto w = op->work(parse_case("add/opmeter/fp32/batch=2,seq=3,hidden=5/threads=1"));
  EXPECT_DOUBLE_EQ(w.flops, 30);
  EXPECT_DOUBLE_EQ(w.bytes_read, 2 * 30 * 4);
  EXPECT_DOUBLE_EQ(w.bytes_written, 30 * 4);
  auto h = op->work(parse_case("add/opmeter/bf16/batch=2,seq=3,hidden=5/threads=1"));
  EXPECT_DOUBLE_EQ(h.bytes(), 3 * 30 * 2);
}

TEST(AddOp, BadParametersSayWhich) {
  try {
    validate_case(parse_case("add/opmeter/fp32/batch=1,seq=1,hidden=0/threads=1"));
    FAIL() << "hidden=0 accepted";
  } catch (const CaseError& e) {
    EXPECT_STREQ(e.what(), "add hidden=0 out of range: expected 1..1048576");
  }
  try {
    validate_case(parse_case("add/opmeter/fp32/batch=1048576,seq=1048576,hidden=1/threads=1"));
    FAIL() << "2^40 elements accepted";
  } catch (const CaseError& e) {
    EXPECT_STREQ(e.what(), "add: batch*seq*hidden above 2^36 elements");
  }
  auto out = cli("run --case add/opmeter/fp32/batch=1,seq=1,hidden=0/threads=1");
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.text.find("add hidden=0 out of range"), std::string::npos) << out.text;
}

TEST(AddOp, SpecAcceptsTheSumAndCatchesOneWrongOrMissingElement) {
  for (const char* kase : {"add/opmeter/fp32/batch=2,seq=3,hidden=37/threads=1",
                           "add/opmeter/bf16/batch=2,seq=3,hidden=37/threads=1",
                           "add/cuda/fp16/batch=2,seq=3,hidden=37/device=cuda:0"}) {
    auto [spec, in, out] = computed(kase, 7);
    auto ok = spec.check(in, out, 7);
    EXPECT_TRUE(ok.ok) << kase << ": " << ok.detail;
    EXPECT_LE(ok.max_error, ok.tolerance) << kase;

    // One element off by 5% of its inputs' scale: a wrong result, not rounding.
    const double wrong = in[0][100] + in[1][100] + 0.05 * (std::fabs(in[0][100]) + std::fabs(in[1][100]));
    store(out.desc().elem, out.data(), 100, wrong);
    auto bad = spec.check(in, out, 7);
    EXPECT_FALSE(bad.ok) << kase;
    EXPECT_GT(bad.max_error, bad.tolerance) << kase;
    EXPECT_NE(bad.detail.find("at C[100]"), std::string::npos) << bad.detail;

    out.poison();
    auto unwritten = spec.check(in, out, 7);
    EXPECT_FALSE(unwritten.ok) << kase;
    EXPECT_NE(unwritten.detail.find("C[0] was not written"), std::string::npos) << unwritten.detail;
  }
}

TEST(AddOp, InputsAreTheSameForEverySeedUseAndDifferAcrossSeeds) {
  auto [spec, in, out] = computed("add/opmeter/fp32/batch=1,seq=1,hidden=1000/threads=1", 3);
  auto again = spec.make_inputs(3), other = spec.make_inputs(4);
  int differ = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(in[0][i], again[0][i]);
    EXPECT_NE(in[0][i], in[1][i]);  // A and B come from streams of their own
    differ += in[0][i] != other[0][i];
  }
  EXPECT_GT(differ, 990);
}

TEST(AddOp, CpuImplIsCorrectOnOddSizes) {
  for (const char* kase : {"add/opmeter/fp32/batch=2,seq=3,hidden=37/threads=2",
                           "add/opmeter/bf16/batch=3,seq=5,hidden=263/threads=2",
                           "add/opmeter/fp32/batch=1,seq=1,hidden=1/threads=1"}) {
    auto r = run_case(parse_case(kase), quick_options());
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(*r.max_error, *r.tolerance) << kase;
    EXPECT_EQ(r.samples.size(), 3u) << kase;
    EXPECT_GT(r.gbps, 0) << kase;
  }
}

TEST(AddOp, CudaImplIsCorrectOnAGpu) {
  auto* p = cuda::plugin();
  if (!p || !p->device(0).ok) GTEST_SKIP() << "no CUDA device: " << (p ? p->device(0).reason : cuda::load_reason());
  for (const char* dtype : {"fp32", "fp16", "bf16"})
    for (const char* shape : {"batch=1,seq=1,hidden=1", "batch=3,seq=5,hidden=263", "batch=4,seq=512,hidden=4096"}) {
      auto kase = fmt::format("add/cuda/{}/{}/device=cuda:0", dtype, shape);
      auto r = run_case(parse_case(kase), quick_options());
      ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
      EXPECT_LE(*r.max_error, *r.tolerance) << kase;
    }
}

TEST(AddOp, PeakMemoryIsTheCasesTensorsOnTheHost) {
  // hidden=1M fp32, hot (one set): A, B and C are 4 MiB each; the check draws fresh inputs into
  // the same set, so the high-water mark is the three tensors, plus little else.
  auto r = run_case(parse_case("add/opmeter/fp32/batch=1,seq=1,hidden=1048576/threads=1,hot"), quick_options());
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  ASSERT_TRUE(r.peak_memory_bytes.has_value());
  const std::size_t tensors = 3 * (std::size_t{4} << 20);
  EXPECT_GE(*r.peak_memory_bytes, tensors);
  EXPECT_LT(*r.peak_memory_bytes, 2 * tensors);
}
