// The op-spec machinery: element encodings (bit-exact with the GPU's conversions), random inputs
// that do not depend on the thread count, poison, and the host and device verify flows.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "opmeter/op_spec.hpp"

using namespace opmeter;

TEST(Dtype, Fp16RoundsToNearestEvenWithSubnormalsAndOverflow) {
  EXPECT_EQ(to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(to_fp16(65504.0f), 0x7bff);                 // the largest finite
  EXPECT_EQ(to_fp16(65519.0f), 0x7bff);                 // rounds down
  EXPECT_EQ(to_fp16(65520.0f), 0x7c00);                 // rounds to inf
  EXPECT_EQ(to_fp16(0x1p-24f), 0x0001);                 // the smallest subnormal
  EXPECT_EQ(to_fp16(0x1p-25f), 0x0000);                 // a tie, to even (zero)
  EXPECT_EQ(to_fp16(0x1.8p-24f), 0x0002);               // a tie, to even (two)
  EXPECT_EQ(to_fp16(1.0f + 0x1p-11f), 0x3c00);          // a tie between 1 and 1+2^-10: even
  EXPECT_EQ(to_fp16(1.0f + 0x1.8p-11f), 0x3c01);
  EXPECT_TRUE(std::isnan(from_fp16(to_fp16(std::nanf("")))));
  for (std::uint32_t h = 0; h < 0x10000; ++h) {  // every finite value survives the round trip
    auto x = static_cast<std::uint16_t>(h);
    if ((x & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(to_fp16(from_fp16(x)), x) << h;
  }
}

TEST(Dtype, Fp8E4m3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(to_fp8_e4m3(-1.0f), 0xb8);
  EXPECT_EQ(to_fp8_e4m3(448.0f), 0x7e);
  EXPECT_EQ(to_fp8_e4m3(1e6f), 0x7e);  // no inf in e4m3: saturates
  EXPECT_EQ(to_fp8_e4m3(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(to_fp8_e4m3(0x1p-9f), 0x01);  // the smallest subnormal
  EXPECT_EQ(to_fp8_e4m3(1.0f + 0x1p-4f), 0x38);  // a tie between 1 and 1.125: even
  EXPECT_FLOAT_EQ(from_fp8_e4m3(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(from_fp8_e4m3(0x7f)));
  for (int v = 0; v < 256; ++v) {
    auto x = static_cast<std::uint8_t>(v);
    if ((x & 0x7f) == 0x7f) continue;
    ASSERT_EQ(to_fp8_e4m3(from_fp8_e4m3(x)), x) << v;
  }
}

TEST(OpSpec, RandomInputsDependOnTheSeedOnlyNotOnThreads) {
  // 2.5 chunks, so that the chunks are drawn on several threads.
  TensorDesc d{"x", Elem::bf16, (std::size_t{5} << 20) / 2, -1, 1};
  HostTensor one(d), many(d);
  omp_set_num_threads(1);
  fill_random(d, one.data(), 42);
  omp_set_num_threads(4);
  fill_random(d, many.data(), 42);
  EXPECT_EQ(std::memcmp(one.data(), many.data(), d.bytes()), 0);
  double lo = 1, hi = -1;
  for (std::size_t i = 0; i < d.count; i += 997) lo = std::min(lo, one[i]), hi = std::max(hi, one[i]);
  EXPECT_GE(lo, -1);
  EXPECT_LE(hi, 1);
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(hi, 0.9);
}

TEST(OpSpec, IntegerInputsCoverTheirRange) {
  TensorDesc d{"labels", Elem::s32, 10000, 3, 7};
  HostTensor t(d);
  fill_random(d, t.data(), 1);
  int seen[10] = {};
  for (std::size_t i = 0; i < d.count; ++i) {
    ASSERT_GE(t[i], 3);
    ASSERT_LT(t[i], 7);
    ++seen[static_cast<int>(t[i])];
  }
  for (int v = 3; v < 7; ++v) EXPECT_GT(seen[v], 2000) << v;
}

TEST(OpSpec, PoisonReadsAsNanInEveryOutputType) {
  for (Elem e : {Elem::f64, Elem::f32, Elem::f16, Elem::bf16, Elem::fp8_e4m3, Elem::s32}) {
    HostTensor t({"out", e, 3});
    t.poison();
    for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(t[i])) << static_cast<int>(e);
    store(e, t.data(), 1, -3.0);
    EXPECT_EQ(t[1], -3.0) << static_cast<int>(e);
  }
}

namespace {
// y = 2x over n elements; the check compares every element exactly.
class DoubleSpec : public OpSpec {
 public:
  void bind(const Case& c) override { n_ = static_cast<std::size_t>(c.get_int("n")); }
  std::vector<TensorDesc> inputs() const override { return {{"x", Elem::f32, n_}}; }
  TensorDesc output() const override { return {"y", Elem::f32, n_}; }
  double tolerance() const override { return 0; }
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t) const override {
    Check c;
    for (std::size_t i = 0; i < n_; ++i) {
      double err = std::fabs(out[i] - 2 * in[0][i]);  // NaN where poison is left
      c.max_error = std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(c.max_error, err);
    }
    c.ok = c.max_error <= tolerance();
    return c;
  }
  std::size_t n_ = 0;
};

class HostDouble : public HostImpl<DoubleSpec> {
 public:
  void run(std::size_t copy) override {
    auto* x = static_cast<const float*>(in(copy, 0));
    auto* y = static_cast<float*>(out(copy));
    for (std::size_t i = 0; i < n_ - skip; ++i) y[i] = 2 * x[i];
    ++runs[copy];
  }
  std::size_t skip = 0;
  std::map<std::size_t, int> runs;
  using HostImpl::copies;
  using HostImpl::in;
};
}  // namespace

TEST(OpSpec, HostImplChecksFreshInputsInSetZeroAndKeepsCopiesAlike) {
  Case c = parse_case("add/opmeter/fp32/n=1000/threads=1");  // only n matters to this spec
  HostDouble impl;
  impl.setup(c, {3, 5});
  ASSERT_EQ(impl.copies(), 3u);
  EXPECT_EQ(std::memcmp(impl.in(0, 0), impl.in(2, 0), 4000), 0);
  EXPECT_NE(impl.in(0, 0), impl.in(2, 0));
  auto ok = impl.verify(6);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(impl.runs[0], 1);
  impl.skip = 1;  // the last element stays poisoned
  EXPECT_FALSE(impl.verify(7).ok);
}

namespace {
// y[r] = table[ids[r]]: input 1 is a table the ids index.
class GatherSpec : public DoubleSpec {
 public:
  std::vector<TensorDesc> inputs() const override {
    return {{"ids", Elem::s32, n_, 0, 1000}, {"table", Elem::f32, 1000}};
  }
  bool is_table(std::size_t input) const override { return input == 1; }
};
class HostGather : public HostImpl<GatherSpec> {
 public:
  void run(std::size_t) override {}
  using HostImpl::copies;
  using HostImpl::in;
};
}  // namespace

TEST(OpSpec, SetsOfAnOpWithTablesDrawTheirOwnIndicesAndShareTheTablesInTurn) {
  Case c = parse_case("add/opmeter/fp32/n=64/threads=1");
  HostGather impl;
  impl.setup(c, {.copies = 7, .seed = 5, .table_copies = 3});
  ASSERT_EQ(impl.copies(), 7u);
  EXPECT_DOUBLE_EQ(impl.table_bytes(), 4000);
  for (std::size_t s = 1; s < 7; ++s) {
    EXPECT_NE(std::memcmp(impl.in(0, 0), impl.in(s, 0), 64 * 4), 0) << s;  // ids of its own
    if (s < 3) {
      EXPECT_NE(impl.in(s, 1), impl.in(0, 1)) << s;  // a copy of set 0's table
      EXPECT_EQ(std::memcmp(impl.in(s, 1), impl.in(0, 1), 4000), 0) << s;
    } else {
      EXPECT_EQ(impl.in(s, 1), impl.in(s % 3, 1)) << s;  // the same memory
    }
  }
  // The draws are the seed's: set 4's ids are those of set_seed(5, 4).
  HostTensor ids({"ids", Elem::s32, 64, 0, 1000});
  impl.fill_input(ids, 0, set_seed(5, 4));
  EXPECT_EQ(std::memcmp(ids.data(), impl.in(4, 0), 64 * 4), 0);
  HostGather whole;  // table_copies 0: every set its own copy of the table
  whole.setup(c, {.copies = 3, .seed = 5});
  EXPECT_NE(whole.in(1, 1), whole.in(0, 1));
  EXPECT_NE(whole.in(2, 1), whole.in(1, 1));
  EXPECT_EQ(table_owner(5, 0), 5u);
  EXPECT_EQ(table_owner(5, 2), 1u);
  EXPECT_EQ(table_owner(1, 2), 1u);
}

TEST(OpSpec, DeviceFlowUploadsTheSameInputsAndChecksWhatComesBack) {
  DoubleSpec spec;
  spec.bind(parse_case("add/opmeter/fp32/n=100/threads=1"));
  std::vector<float> device_x(100), device_y(100);  // a pretend device
  DeviceIo io{.upload = [&](std::size_t i, const HostTensor& t) {
                EXPECT_EQ(i, 0u);
                std::memcpy(device_x.data(), t.data(), t.bytes());
              },
              .fill_output = [&](int byte) { std::memset(device_y.data(), byte, 400); },
              .download_output = [&](HostTensor& t) { std::memcpy(t.data(), device_y.data(), t.bytes()); }};
  auto kernel = [&] {
    for (int i = 0; i < 100; ++i) device_y[i] = 2 * device_x[i];
  };
  EXPECT_TRUE(verify_on_device(spec, 9, io, kernel).ok);
  EXPECT_EQ(device_x[5], static_cast<float>(spec.make_inputs(9)[0][5]));  // the host inputs, uploaded
  EXPECT_FALSE(verify_on_device(spec, 9, io, [] {}).ok);  // nothing computed: poison comes back
}
