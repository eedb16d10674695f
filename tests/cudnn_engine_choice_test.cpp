// Which cuDNN engines an fp32 graph may run on (include/opmeter/cuda/cudnn_engine_choice.hpp): a pure
// decision over the engine's numerical notes, checked without cuDNN or a GPU.
#include <gtest/gtest.h>

#include "opmeter/cuda/cudnn_engine_choice.hpp"

using namespace opmeter;
using cudnn::EngineNotes;
using cudnn::precision_refusal;

TEST(CudnnEngineChoice, Fp32RefusesTensorCoreDownConvertAndReducedPrecisionEngines) {
  EXPECT_EQ(precision_refusal(DType::fp32, EngineNotes{}), "");
  const std::string tf32 = precision_refusal(DType::fp32, {.tensor_core = true});
  EXPECT_NE(tf32.find("TF32"), std::string::npos) << tf32;
  EXPECT_NE(tf32.find("not fp32"), std::string::npos) << tf32;
  EXPECT_NE(precision_refusal(DType::fp32, {.down_convert_inputs = true}).find("down-converts"), std::string::npos);
  EXPECT_NE(precision_refusal(DType::fp32, {.reduced_precision_reduction = true}).find("reduces in less than fp32"),
            std::string::npos);
  const std::string all = precision_refusal(DType::fp32, {true, true, true});
  EXPECT_EQ(all, "it runs on tensor cores (TF32), down-converts its inputs and reduces in less than fp32, not fp32");
}

TEST(CudnnEngineChoice, SixteenBitGraphsTakeTensorCoreEngines) {
  for (DType d : {DType::fp16, DType::bf16}) {
    EXPECT_EQ(precision_refusal(d, {.tensor_core = true}), "") << to_string(d);
    EXPECT_EQ(precision_refusal(d, {true, true, true}), "") << to_string(d);
  }
}

TEST(CudnnEngineChoice, NotesReadAsTextForTheDetails) {
  EXPECT_EQ(cudnn::notes_text({}), "none");
  EXPECT_EQ(cudnn::notes_text({.tensor_core = true, .reduced_precision_reduction = true}),
            "tensor_core, reduced_precision_reduction");
}
