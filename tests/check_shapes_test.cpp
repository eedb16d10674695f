// The ops' check shapes (OpDef::check_shapes), which `opmeter check` and the tensor ops' test run.
#include <gtest/gtest.h>

#include "opmeter/registry.hpp"

using namespace opmeter;

namespace {
std::int64_t value(const Params& p, const std::string& key) {
  for (auto& [k, v] : p)
    if (k == key) return std::stoll(v);
  return -1;
}
}  // namespace

TEST(CheckShapes, EveryOpDeclaresShapesItsValidationTakes) {
  int ops = 0;
  for (const OpDef* op : Registry::global().ops()) {
    if (op->name.rfind("test_", 0) == 0) continue;  // the test binary's own ops
    ++ops;
    EXPECT_FALSE(op->check_shapes.empty()) << op->name << " declares no check shapes";
    for (auto& shape : op->check_shapes) {
      Case c;
      c.op = op->name;
      c.impl = "reference";
      c.params = shape;
      for (auto& key : op->params) EXPECT_TRUE(c.has(key)) << c.to_string() << " lacks " << key;
      EXPECT_NO_THROW(op->validate(c)) << c.to_string();
    }
  }
  EXPECT_GE(ops, 30);
}

TEST(CheckShapes, RowOpsHaveOneElementAndARowOfTwoToTheSixteenPlusOne) {
  for (const char* name : {"relu", "gelu", "layernorm", "rmsnorm", "softmax", "batchnorm", "mse", "cross_entropy", "add",
                           "embedding"}) {
    const OpDef* op = Registry::global().op(name);
    ASSERT_NE(op, nullptr) << name;
    bool one = false, wide = false, tail = false;
    for (auto& p : op->check_shapes) {
      one = one || value(p, "batch") * value(p, "seq") * value(p, "hidden") == 1;
      wide = wide || value(p, "hidden") == 65537;
      tail = tail || value(p, "hidden") % 16 != 0;
    }
    EXPECT_TRUE(one && wide && tail) << name;
  }
}

TEST(CheckShapes, EveryQuantizationRecipeIsCheckedAtDecodeAndOnSeveralRows) {
  const OpDef* linear = Registry::global().op("linear");
  ASSERT_NE(linear, nullptr);
  for (auto& recipe : linear->optional_params.at(0).values) {
    if (recipe == linear->optional_params.at(0).absent) continue;
    int decode = 0, rows = 0;
    for (auto& p : linear->check_shapes) {
      Case c;
      c.params = p;
      if (c.get_or("quant", "") != recipe) continue;
      (value(p, "batch") * value(p, "seq") == 1 ? decode : rows)++;
    }
    EXPECT_TRUE(decode > 0 && rows > 0) << recipe;
  }
}
