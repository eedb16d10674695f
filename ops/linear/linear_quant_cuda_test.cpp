// cuda_quant (quantized linear on CUDA devices): the host-side repacking of quantized weights into
// the kernel's mma fragment layout (here), and on a GPU every recipe end to end on odd shapes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "engine/runner.hpp"
#include "opmeter/dtype.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/quant_gpu_decode.hpp"
#include "ops/linear/quant_gpu_limbs.hpp"
#include "ops/linear/quant_gpu_pack.hpp"
#include "tests/case_problem.hpp"
#include "tests/gpu_op_sweep.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::case_problem;
using opmeter::testing::quick_options;
namespace gp = opmeter::linear::gpu_pack;
namespace gd = opmeter::linear::gpu_decode;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(gen() & 0xFF);
  return v;
}

}  // namespace

TEST(QuantGpuPack, LayoutPadsChannelsToTilesAndKToUnits) {
  const auto l = gp::layout_of(quant::WeightFormat::int4, 33, 320);
  EXPECT_EQ(l.n_tiles, 5u);
  EXPECT_EQ(l.k_units, 3u);  // 128 k per unit
  EXPECT_EQ(l.bytes(), 5u * 3u * 512u);
  EXPECT_EQ(l.padded_out(), 40u);
  const auto l8 = gp::layout_of(quant::WeightFormat::int8, 7, 65);
  EXPECT_EQ(l8.n_tiles, 1u);
  EXPECT_EQ(l8.k_units, 2u);  // 64 k per unit
  EXPECT_THROW(gp::layout_of(quant::WeightFormat::full, 8, 64), std::invalid_argument);
}

TEST(QuantGpuPack, LanesHoldTheirMmaFragment) {
  // Lane 4g + t of n-tile 0, step 0, holds channel g's k = 2t, 2t+1 (b0) and 2t+8, 2t+9 (b1).
  const auto l = gp::layout_of(quant::WeightFormat::int8, 8, 64);
  unsigned shift = 9;
  EXPECT_EQ(l.byte_of(0, 0, &shift), 0u);
  EXPECT_EQ(shift, 0u);
  EXPECT_EQ(l.byte_of(0, 1, &shift), 1u);
  EXPECT_EQ(l.byte_of(0, 8, &shift), 2u);
  EXPECT_EQ(l.byte_of(0, 9, &shift), 3u);
  EXPECT_EQ(l.byte_of(0, 16, &shift), 4u);   // step 1
  EXPECT_EQ(l.byte_of(0, 2, &shift), 16u);   // t = 1: lane 1
  EXPECT_EQ(l.byte_of(3, 6, &shift), (3u * 4 + 3) * 16);
  // int4: step 0 in nibbles 0 (k 0), 4 (k 1), 1 (k 8), 5 (k 9) of word 0; step 1 from nibble 2.
  const auto l4 = gp::layout_of(quant::WeightFormat::int4, 8, 128);
  EXPECT_EQ(l4.byte_of(0, 0, &shift), 0u);
  EXPECT_EQ(shift, 0u);
  EXPECT_EQ(l4.byte_of(0, 1, &shift), 2u);
  EXPECT_EQ(shift, 0u);
  EXPECT_EQ(l4.byte_of(0, 8, &shift), 0u);
  EXPECT_EQ(shift, 4u);
  EXPECT_EQ(l4.byte_of(0, 9, &shift), 2u);
  EXPECT_EQ(shift, 4u);
  EXPECT_EQ(l4.byte_of(0, 16, &shift), 1u);
  EXPECT_EQ(shift, 0u);
  EXPECT_EQ(l4.byte_of(0, 32, &shift), 4u);  // step 2: word 1
}

TEST(QuantGpuPack, EveryWeightHasItsOwnPlace) {
  for (auto [f, operand] : {std::pair{quant::WeightFormat::int8, gp::Operand::b},
                            {quant::WeightFormat::int4, gp::Operand::b},
                            {quant::WeightFormat::int4, gp::Operand::a},
                            {quant::WeightFormat::int8, gp::Operand::a}}) {
    const auto l = gp::layout_of(f, 19, 256, operand);
    std::vector<int> seen(l.bytes() * 2, 0);
    for (std::size_t j = 0; j < l.out; ++j)
      for (std::size_t k = 0; k < l.hidden; ++k) {
        unsigned shift = 0;
        const std::size_t b = l.byte_of(j, k, &shift);
        ASSERT_LT(b, l.bytes());
        ++seen[b * 2 + shift / 4];
      }
    for (int s : seen) ASSERT_LE(s, 1);
  }
}

TEST(QuantGpuPack, PackThenUnpackGivesTheCanonicalCodes) {
  struct Shape {
    std::size_t out, hidden;
  };
  for (auto [f, operand] : {std::pair{quant::WeightFormat::int8, gp::Operand::b},
                            {quant::WeightFormat::fp8, gp::Operand::b},
                            {quant::WeightFormat::int4, gp::Operand::b},
                            {quant::WeightFormat::int4, gp::Operand::a},
                            {quant::WeightFormat::int8, gp::Operand::a}})
    for (auto sh : {Shape{1, 64}, Shape{33, 320}, Shape{8, 128}, Shape{13, 77}}) {
      if (f == quant::WeightFormat::int4 && sh.hidden % 2) continue;
      const auto l = gp::layout_of(f, sh.out, sh.hidden, operand);
      const std::size_t n = sh.out * sh.hidden;
      const auto canonical = random_bytes(f == quant::WeightFormat::int4 ? n / 2 : n, 5);
      const auto packed = gp::pack_codes(l, canonical);
      ASSERT_EQ(packed.size(), l.bytes());
      EXPECT_EQ(gp::unpack_codes(l, packed), canonical)
          << int(f) << (operand == gp::Operand::a ? " as A " : " ") << sh.out << "x" << sh.hidden;
    }
}

TEST(QuantGpuPack, AsTheAOperandChannelsPadToSixteen) {
  static_assert(gp::kTileNA == gd::kTileNA, "the pack's tiles are the decode kernel's");
  const auto l = gp::layout_of(quant::WeightFormat::int4, 33, 320, gp::Operand::a);
  EXPECT_EQ(l.n_tiles, 3u);
  EXPECT_EQ(l.k_units, 5u);  // 64 k per unit
  EXPECT_EQ(l.padded_out(), 48u);
  EXPECT_EQ(l.bytes(), 3u * 5u * 512u);
  const auto l8 = gp::layout_of(quant::WeightFormat::int8, 33, 320, gp::Operand::a);
  EXPECT_EQ(l8.k_units, 10u);  // 32 k per unit: one m16n8k32 step
  EXPECT_EQ(l8.bytes(), 3u * 10u * 512u);
  EXPECT_FALSE(l8.int8_offset());
  EXPECT_TRUE(gp::layout_of(quant::WeightFormat::int8, 33, 320).int8_offset());
  try {
    gp::layout_of(quant::WeightFormat::fp8, 8, 64, gp::Operand::a);
    ADD_FAILURE() << "fp8 as the A operand was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fp8 weights are not laid out as the mma's A operand"), std::string::npos)
        << e.what();
  }
}

// int8 as A: each lane's 16 bytes of a unit are its m16n8k32 A fragment (PTX: a0 = row g, k
// 4t .. 4t + 3; a1 = row g + 8; a2 = row g, k 16 + 4t ..; a3 = row g + 8, those k), rows being
// output channels, the codes as they are. Checked against the canonical codes.
TEST(QuantGpuPack, Int8AsTheAOperandIsEachLanesFragmentAsStored) {
  static_assert(gp::kStepK8 == opmeter::linear::gpu_limbs::kStepK, "a unit is one step of the integer kernel");
  const std::size_t out = 40, hidden = 96;  // a partial third tile; 3 units
  const auto l = gp::layout_of(quant::WeightFormat::int8, out, hidden, gp::Operand::a);
  const auto canonical = random_bytes(out * hidden, 13);
  const auto packed = gp::pack_codes(l, canonical);
  for (std::size_t tile = 0; tile < l.n_tiles; ++tile)
    for (std::size_t unit = 0; unit < l.k_units; ++unit)
      for (std::size_t lane = 0; lane < 32; ++lane)
        for (std::size_t reg = 0; reg < 4; ++reg)
          for (std::size_t i = 0; i < 4; ++i) {
            const std::size_t g = lane / 4, t = lane % 4;
            const std::size_t j = tile * 16 + g + 8 * (reg % 2), k = unit * 32 + 4 * t + i + 16 * (reg / 2);
            const std::uint8_t want = j < out && k < hidden ? canonical[j * hidden + k] : 0;
            ASSERT_EQ(packed[(tile * l.k_units + unit) * 512 + lane * 16 + reg * 4 + i], want)
                << "lane " << lane << " a" << reg << " byte " << i;
          }
}

// Each lane's word of a step, decoded as the kernel decodes it (one lop3 per fragment after a
// shift by 4i), is the A fragment PTX's m16n8k16 gives lane 4g + t: a0 = (row g, k 2t, 2t + 1),
// a1 = (row g + 8, the same k), a2 = (row g, k 2t + 8, 2t + 9), a3 = (row g + 8, those k); rows
// are output channels. Checked against the canonical codes, not against byte_of.
TEST(QuantGpuPack, Int4AsTheAOperandGivesEachLaneItsFragments) {
  const std::size_t out = 40, hidden = 192;  // a partial third tile; 3 units
  const auto l = gp::layout_of(quant::WeightFormat::int4, out, hidden, gp::Operand::a);
  const auto canonical = random_bytes(out * hidden / 2, 11);
  const auto packed = gp::pack_codes(l, canonical);
  auto code = [&](std::size_t j, std::size_t k) -> int {
    if (j >= out || k >= hidden) return 0;
    const std::size_t i = j * hidden + k;
    return (canonical[i / 2] >> (4 * (i % 2))) & 15;
  };
  auto bf16_value = [](std::uint32_t bits16) { return from_bf16(static_cast<std::uint16_t>(bits16)); };
  for (std::size_t tile = 0; tile < l.n_tiles; ++tile)
    for (std::size_t unit = 0; unit < l.k_units; ++unit)
      for (std::size_t lane = 0; lane < 32; ++lane)
        for (std::size_t step = 0; step < 4; ++step) {
          std::uint32_t word = 0;
          std::memcpy(&word, packed.data() + (tile * l.k_units + unit) * 512 + lane * 16 + step * 4, 4);
          const std::size_t g = lane / 4, t = lane % 4;
          for (std::size_t i = 0; i < 4; ++i) {
            const std::uint32_t a = gd::lop3(word >> (4 * i), gd::kNibble0, gd::kBf16Exponent128, gd::kLutAndOr);
            const std::size_t j = tile * 16 + g + 8 * (i % 2), k = unit * 64 + step * 16 + 2 * t + 8 * (i / 2);
            ASSERT_EQ(bf16_value(a & 0xFFFFu), 128.f + float(code(j, k))) << "lane " << lane << " a" << i;
            ASSERT_EQ(bf16_value(a >> 16), 128.f + float(code(j, k + 1))) << "lane " << lane << " a" << i;
          }
        }
}

TEST(QuantGpuPack, Int8CodesAreStoredOffsetBy128AndPaddingIsZero) {
  const auto l = gp::layout_of(quant::WeightFormat::int8, 1, 1);
  const auto packed = gp::pack_codes(l, {static_cast<std::uint8_t>(static_cast<std::int8_t>(-3))});
  EXPECT_EQ(packed[0], 125);  // -3 + 128
  for (std::size_t i = 1; i < packed.size(); ++i) ASSERT_EQ(packed[i], 0) << i;
  EXPECT_THROW(gp::pack_codes(l, {1, 2}), std::invalid_argument);
}

TEST(QuantGpuPack, GroupParamsAreScaleLowZeroHighIn16Bits) {
  quant::QuantizedWeights q;
  q.recipe = *quant::parse_recipe("int4wo-64");
  q.out = 2;
  q.hidden = 128;
  q.scales = {0.5f, 1.0f, 2.0f, 0.25f};
  q.zeros = {8.f, 7.f, 0.f, 15.f};
  const auto w = gp::pack_group_params(q, 8, Elem::bf16);
  ASSERT_EQ(w.size(), 16u);
  EXPECT_EQ(w[0], 0x3F00u | (0x4100u << 16));  // bf16 0.5, bf16 8
  EXPECT_EQ(w[3], 0x3E80u | (0x4170u << 16));  // bf16 0.25, bf16 15
  EXPECT_EQ(w[4], 0u);                          // padded channel
  const auto h = gp::pack_group_params(q, 2, Elem::f16);
  EXPECT_EQ(h[1], 0x3C00u | (0x4700u << 16));  // fp16 1, fp16 7
  EXPECT_THROW(gp::pack_group_params(q, 2, Elem::f32), std::invalid_argument);
}

TEST(QuantLinearCuda, ImplIsRegisteredForEveryLinearOpAndOnlyForQuantizedCases) {
  for (const char* op : {"linear", "ln_linear_gelu", "ln_linear_silu"}) {
    const ImplDef* d = Registry::global().impl(op, "cuda_quant");
    ASSERT_NE(d, nullptr) << op;
    EXPECT_EQ(d->needs, std::vector<std::string>{"quant"});
    EXPECT_EQ(d->accepts, (std::vector<std::string>{"ksplit", "operand"}));
    EXPECT_TRUE(d->runs_on("cuda"));
  }
}

TEST(QuantLinearCuda, KsplitTakesAutoOrANumberForWeightOnlyInferenceOnly) {
  const std::string base = "linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=1280,act=none,quant=";
  EXPECT_EQ(case_problem(base + "int4wo-64,ksplit=3/device=cuda:0"), "ok");
  EXPECT_EQ(case_problem(base + "int8wo,ksplit=auto/device=cuda:0"),
            "ksplit=auto is the default: leave it out of the case");
  for (const char* bad : {"0", "x", "1025", "-2", "99999"})
    EXPECT_EQ(case_problem(base + "int8wo,ksplit=" + bad + "/device=cuda:0"),
              fmt::format("ksplit={} unknown: expected auto or a number of splits from 1 to 1024", bad));
  EXPECT_EQ(case_problem(base + "int8dq,ksplit=2/device=cuda:0"),
            "ksplit=2 splits K in the weight-only kernel: it takes quant=int8wo, int4wo-G, hqq-int4-G or float8wo in "
            "inference, not quant=int8dq");
  // An impl that does not split K skips the case, naming the parameter.
  auto r =
      run_case(parse_case("linear/opmeter/bf16/batch=1,seq=1,hidden=64,out=8,act=none,quant=int8wo,ksplit=2/threads=1"),
               quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("ksplit"), std::string::npos) << r.reason;
}

TEST(QuantLinearCuda, OperandTakesAOrBForWeightOnlyInferenceOnly) {
  const std::string base = "linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=1280,act=none,quant=";
  EXPECT_EQ(case_problem(base + "int4wo-64,operand=b/device=cuda:0"), "ok");
  EXPECT_EQ(case_problem(base + "int8wo,operand=a,ksplit=2/device=cuda:0"), "ok");
  EXPECT_EQ(case_problem(base + "int8wo,operand=auto/device=cuda:0"),
            "operand=auto is the default: leave it out of the case");
  for (const char* bad : {"A", "c", "", "ab"})
    EXPECT_EQ(case_problem(base + "int8wo,operand=" + bad + "/device=cuda:0"),
              fmt::format("operand={} unknown: expected one of auto, a, b", bad));
  EXPECT_EQ(case_problem(base + "float8dq-row,operand=b/device=cuda:0"),
            "operand=b picks the mma operand of the weight-only kernel: it takes quant=int8wo, int4wo-G, hqq-int4-G or "
            "float8wo in inference, not quant=float8dq-row");
  // An impl without the weight-only kernel skips the case, naming the parameter.
  auto r = run_case(
      parse_case("linear/opmeter/bf16/batch=1,seq=1,hidden=64,out=8,act=none,quant=int8wo,operand=b/threads=1"),
      quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("operand=b"), std::string::npos) << r.reason;
}

// The B form of the decode kernel at M <= 8 (where A is the choice, tested by the other tests)
// gives the same product, and the kernel says which form ran; A past 8 rows, or for fp8, is
// skipped saying why.
TEST(QuantLinearCuda, BothOperandsAreCorrectAtDecodeOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  for (const char* dtype : {"bf16", "fp16"})
    for (const char* recipe : {"int8wo", "int4wo-32", "hqq-int4-128"})
      for (const char* rows : {"1", "5"})
        for (const char* operand : {"a", "b"}) {
          if (std::string(operand) == "a" && std::string(dtype) == "fp16") continue;  // one A case a recipe and rows
          const auto kase = fmt::format(
              "linear/cuda_quant/{}/batch=1,seq={},hidden=1664,out=40,act=silu,quant={},operand={}/device=cuda:0",
              dtype, rows, recipe, operand);
          const auto r = run_case(parse_case(kase), quick_options());
          ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
          const std::string kernel = r.details.at("kernel");
          EXPECT_EQ(kernel.find("as the A operand") != std::string::npos, std::string(operand) == "a") << kernel;
        }
  // The A forms' last row (8: B's eighth column), split in K, groups of 128 at a compile-time end.
  for (const char* recipe : {"int8wo", "int4wo-128"}) {
    const auto kase = fmt::format(
        "linear/cuda_quant/bf16/batch=1,seq=8,hidden=2048,out=40,act=none,quant={},operand=a,ksplit=2/device=cuda:0",
        recipe);
    const auto r = run_case(parse_case(kase), quick_options());
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(*r.max_error, *r.tolerance) << kase;
  }
  for (const char* kase :
       {"linear/cuda_quant/bf16/batch=1,seq=9,hidden=1024,out=40,act=none,quant=int8wo,operand=a/device=cuda:0",
        "linear/cuda_quant/bf16/batch=1,seq=1,hidden=1024,out=40,act=none,quant=float8wo,operand=a/device=cuda:0"}) {
    const auto r = run_case(parse_case(kase), quick_options());
    if (std::string(kase).find("float8wo") != std::string::npos && r.status == Status::skipped &&
        r.reason.find("compute capability 8.9") != std::string::npos)
      continue;  // no fp8 on this GPU: skipped before the operand is asked about
    EXPECT_EQ(r.status, Status::skipped) << kase;
    EXPECT_NE(r.reason.find("operand=a: the decode kernel takes"), std::string::npos) << r.reason;
  }
}

// Every split of K that fits gives the same product, and the kernel says which it ran; a split
// that leaves one without K is skipped saying which fit.
TEST(QuantLinearCuda, ForcedSplitsOfKAreCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  for (const char* recipe : {"int8wo", "int4wo-64"})
    for (const char* rows : {"1", "9", "40"})
      for (int ks : {1, 2, 3, 6}) {  // 6 chunks of 512 (decode) or 12 of 256 (64-row tiles)
        const auto kase = fmt::format(
            "linear/cuda_quant/bf16/batch=1,seq={},hidden=3072,out=72,act=gelu,quant={},ksplit={}/device=cuda:0", rows,
            recipe, ks);
        const auto r = run_case(parse_case(kase), quick_options());
        ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        EXPECT_LE(*r.max_error, *r.tolerance) << kase;
        EXPECT_NE(r.details.at("kernel").find(fmt::format("split-K {}", ks)), std::string::npos)
            << r.details.at("kernel");
        // At M <= 8 both take the weights as the A operand, int8 on integer tensor cores.
        const std::string kernel = r.details.at("kernel");
        const bool as_a = std::string(rows) == "1", integer = as_a && std::string(recipe) == "int8wo";
        EXPECT_EQ(kernel.find("as the A operand") != std::string::npos, as_a) << kernel;
        EXPECT_EQ(kernel.find("integer tensor cores") != std::string::npos, integer) << kernel;
      }
  const auto r = run_case(
      parse_case(
          "linear/cuda_quant/bf16/batch=1,seq=1,hidden=8192,out=72,act=none,quant=int8wo,ksplit=5/device=cuda:0"),
      quick_options());
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_NE(r.reason.find("which split 1, 2, 3, 4, 6, 8, 16 ways"), std::string::npos) << r.reason;
}

TEST(QuantLinearCuda, EveryRecipeIsCorrectOnAGpu) {
  if (!opmeter::testing::gpu_here()) GTEST_SKIP() << "no CUDA device: " << opmeter::testing::why_no_gpu();
  struct Shape {
    const char* op;
    std::size_t rows, hidden, out;
  };
  // Weight-only: odd rows, odd out, odd hidden (8-bit codes); decode (M <= 16) and 64-row tiles.
  // hidden > 512 at M <= 16 splits K (the decode kernel's last block sums the splits), 1601 with a
  // partial last chunk and x read element by element.
  // Dynamic: hidden and out as cuBLASLt's int8 / fp8 GEMMs need them.
  const Shape odd[] = {{"linear", 1, 77, 33}, {"ln_linear_silu", 3, 200, 41}, {"linear", 37, 520, 19}, {"linear", 16, 64, 8},
                       {"linear", 2, 1601, 40}};
  // int4 at M <= 8 runs its weights as the mma's A operand (tiles of 16 channels): 33 and 41
  // channels end in a partial tile, 1536 splits K in 3 chunks.
  const Shape int4[] = {{"linear", 1, 128, 33},
                        {"ln_linear_gelu", 5, 256, 41},
                        {"linear", 70, 640, 17},
                        {"linear", 9, 2048, 72},
                        {"linear", 8, 1536, 24}};
  const Shape dyn[] = {{"linear", 1, 64, 40}, {"ln_linear_relu", 3, 192, 24}, {"linear", 37, 256, 72}};
  auto check = [](const Shape& s, const std::string& dtype, const std::string& recipe) {
    const std::string act = std::string(s.op) == "linear" ? ",act=gelu" : "";
    const auto kase = fmt::format("{}/cuda_quant/{}/batch=1,seq={},hidden={},out={}{},quant={}/device=cuda:0", s.op, dtype,
                                  s.rows, s.hidden, s.out, act, recipe);
    const auto r = run_case(parse_case(kase), quick_options());
    if (r.status == Status::skipped && r.reason.find("compute capability") != std::string::npos) return;  // pre-Ada fp8
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(*r.max_error, *r.tolerance) << kase;
    EXPECT_TRUE(r.metrics.count("weight_bytes")) << kase;
    EXPECT_TRUE(r.metrics.count("sqnr_db")) << kase;
  };
  for (const char* dtype : {"bf16", "fp16"}) {
    for (const char* recipe : {"int8wo", "float8wo"})
      for (auto& s : odd) check(s, dtype, recipe);
    for (const char* recipe : {"int4wo-32", "int4wo-64", "int4wo-128", "hqq-int4-64"})
      for (auto& s : int4)
        if (s.hidden % 128 == 0 || std::string(recipe) != "int4wo-128") check(s, dtype, recipe);
    for (const char* recipe : {"int8dq", "float8dq-tensor", "float8dq-row"})
      for (auto& s : dyn) check(s, dtype, recipe);
  }
}
