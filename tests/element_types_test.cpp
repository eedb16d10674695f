// A GEMM dtype computes different element types on the CPU and on CUDA (ops/gemm/gemm.hpp): the
// difference is declared by the op's spec, recorded in every result and flagged by compare.
#include <gtest/gtest.h>

#include "analysis/compare.hpp"
#include "engine/element_types.hpp"
#include "engine/runner.hpp"
#include "tests/quick_options.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;
using namespace opmeter::fixtures;
using opmeter::testing::quick_options;

TEST(ElementTypes, GemmSaysWhatEachDeviceComputes) {
  const std::string shape = "/M=8,N=8,K=8/";
  // As ops/gemm/gemm.hpp documents them: a bf16 C on CUDA, fp32 on the CPU; u8 x s8 on the CPU.
  EXPECT_EQ(element_types(parse_case("gemm/onednn/bf16" + shape + "threads=1")), "A bf16, B bf16 -> C f32");
  EXPECT_EQ(element_types(parse_case("gemm/cublaslt/bf16" + shape + "device=cuda:0")), "A bf16, B bf16 -> C bf16");
  EXPECT_EQ(element_types(parse_case("gemm/onednn/int8" + shape + "threads=1")), "A u8, B s8 -> C s32");
  EXPECT_EQ(element_types(parse_case("gemm/cublaslt/int8" + shape + "device=cuda:0")), "A s8, B s8 -> C s32");
  EXPECT_EQ(element_types(parse_case("gemm/onednn/fp32" + shape + "threads=1")), "A f32, B f32 -> C f32");
  EXPECT_EQ(element_types(parse_case("peak/opmeter/fp32/kernel=fma/threads=1")), "");  // no spec: nothing to say
}

TEST(ElementTypes, QuantizedLayersSayHowTheyHoldWeightsAndActivations) {
  // As ops/linear/quant/recipe.hpp defines the recipes: W is read as codes (the bf16 W is kept
  // only for checks), and a dynamic recipe quantizes the activations on every call.
  const std::string linear = "linear/opmeter_quant/bf16/batch=1,seq=2,hidden=64,out=16,act=none,quant=";
  EXPECT_EQ(element_types(parse_case(linear + "int4wo-64/threads=1")),
            "x bf16, w bf16 (as u4 codes with a scale and zero per 64 inputs), bias f32 -> out bf16");
  EXPECT_EQ(element_types(parse_case(linear + "int8dq/threads=1")),
            "x bf16 (as s8 per token), w bf16 (as s8 codes and a scale per channel), bias f32 -> out bf16");
  EXPECT_EQ(element_types(parse_case(linear + "float8dq-tensor/threads=1")),
            "x bf16 (as fp8_e4m3 with one scale), w bf16 (as fp8_e4m3 codes and one scale), bias f32 -> out bf16");
  // The baseline is read as it is stored.
  EXPECT_EQ(element_types(parse_case("linear/onednn/bf16/batch=1,seq=2,hidden=64,out=16,act=none/threads=1")),
            "x bf16, w bf16, bias f32 -> out bf16");
  const auto block =
      element_types(parse_case("transformer_block/opmeter_quant/bf16/"
                               "batch=1,seq=2,hidden=64,heads=2,mlp=128,act=gelu,causal=0,quant=int8wo/threads=1"));
  EXPECT_NE(block.find("(as s8 codes and a scale per channel)"), std::string::npos) << block;
  EXPECT_EQ(block.find("x bf16 (as"), std::string::npos) << block;
}

TEST(ElementTypes, EveryResultRecordsThem) {
  Case c = parse_case("gemm/reference/bf16/M=8,N=8,K=8/threads=1");
  Result r = run_case(c, quick_options());
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(r.details["types"], "A bf16, B bf16 -> C f32");
}

TEST(ElementTypes, CompareFlagsACaseWhoseTypesDiffer) {
  const char* kCase = "gemm/x/bf16/M=8,N=8,K=8/threads=1";
  Result base = measured(kCase, samples_around(1e-3, 20, 0.01, 1));
  Result neu = measured(kCase, samples_around(1e-3, 20, 0.01, 2));
  base.details["types"] = "A bf16, B bf16 -> C f32";
  neu.details["types"] = "A bf16, B bf16 -> C bf16";
  ResultSet a{"a", ResultsFormat::results_json, {}, {base}}, b{"b", ResultsFormat::results_json, {}, {neu}};
  auto warned = [](const Comparison& c) {
    for (auto& w : c.context_warnings)
      if (w.find("computes other types") != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(warned(compare_results(a, b)));
  b.results[0].details["types"] = base.details["types"];
  EXPECT_FALSE(warned(compare_results(a, b)));
  // How an input is held is no other arithmetic: results from before the "(as ...)" notes compare
  // equal to later ones; other element types still warn.
  a.results[0].details["types"] = "x bf16, w bf16, bias f32 -> out bf16";
  b.results[0].details["types"] =
      "x bf16, w bf16 (as u4 codes with a scale and zero per 64 inputs), bias f32 -> out bf16";
  EXPECT_FALSE(warned(compare_results(a, b)));
  b.results[0].details["types"] =
      "x f32, w bf16 (as u4 codes with a scale and zero per 64 inputs), bias f32 -> out bf16";
  EXPECT_TRUE(warned(compare_results(a, b)));
}
