// The quantization table: each recipe beside the fastest baseline of its shape, its speedup,
// SQNR and weight bytes, in markdown, JSON, CSV and the report's chart.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "analysis/quantization.hpp"
#include "report/chart_assets.hpp"
#include "report/charts.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "tests/browser_render.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;
using fixtures::measured;

namespace {
const std::string kShape = "batch=1,seq=1,hidden=256,out=512,act=none";

Result recipe(const std::string& impl, const std::string& quant, double s, double sqnr, const std::string& shape = kShape,
              const std::string& extra = "") {
  Result r = measured("linear/" + impl + "/bf16/" + shape + ",quant=" + quant + extra + "/threads=2", s);
  r.set_metric("sqnr_db", {.value = sqnr, .unit = "dB", .better = Better::higher});
  r.set_metric("weight_bytes", {.value = 256 * 512 / 2.0 + 4096, .unit = "B", .better = Better::lower, .format = MetricFormat::bytes});
  return r;
}

std::vector<Result> sample_results() {
  return {measured("linear/onednn/bf16/" + kShape + "/threads=2", 100e-6),
          measured("linear/opmeter/bf16/" + kShape + "/threads=2", 80e-6),  // the faster baseline
          recipe("opmeter_quant", "int4wo-64", 20e-6, 24.0), recipe("opmeter_quant", "int8wo", 40e-6, 44.0),
          // Faster, but another dtype, thread count, cache or a reference: none is a baseline here.
          measured("linear/onednn/fp32/" + kShape + "/threads=2", 10e-6),
          measured("linear/onednn/bf16/" + kShape + "/threads=1", 10e-6),
          measured("linear/onednn/bf16/" + kShape + "/threads=2,hot", 10e-6),
          measured("linear/reference/bf16/" + kShape + "/threads=2", 10e-6),
          recipe("opmeter_quant", "int8wo", 30e-6, 44.0, "batch=1,seq=16,hidden=256,out=512,act=none")};
}
}  // namespace

TEST(QuantReport, RecipesBesideTheFastestBaselineOfTheirShape) {
  auto rows = quant_rows(sample_results());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].recipe, "int4wo-64");
  EXPECT_EQ(rows[0].baseline_impl, "opmeter");
  ASSERT_TRUE(rows[0].speedup);
  EXPECT_NEAR(*rows[0].speedup, 4.0, 0.02);
  EXPECT_NEAR(*rows[1].speedup, 2.0, 0.01);
  EXPECT_EQ(rows[0].shape, kShape);
  EXPECT_EQ(rows[0].mode, "inference");
  EXPECT_EQ(rows[0].m, 1);
  EXPECT_EQ(*rows[0].sqnr_db, 24.0);
  EXPECT_EQ(*rows[0].baseline_weight_bytes, 256.0 * 512 * 2);  // bf16 weights of the baseline
  // seq=16 has no baseline measured: no speedup, said so.
  EXPECT_EQ(rows[2].m, 16);
  EXPECT_TRUE(rows[2].baseline_impl.empty());
  EXPECT_FALSE(rows[2].speedup);
}

// A transformer block's baseline weighs its four matrices: Wqkv 3h x h, Wo h x h, W1 mlp x h and
// W2 h x mlp, in its dtype (h = 64, mlp = 48, bf16: 64 x (192 + 64 + 48 + 48) x 2 bytes).
TEST(QuantReport, ATransformerBlocksBaselineWeighsItsFourMatrices) {
  const std::string block = "transformer_block/{}/bf16/batch=1,seq=1,hidden=64,heads=1,mlp=48,act=gelu,causal=0{}/threads=2";
  Result q = measured(fmt::format(fmt::runtime(block), "opmeter_quant", ",quant=int8wo"), 20e-6);
  q.set_metric("weight_bytes", {.value = 23000, .unit = "B", .better = Better::lower, .format = MetricFormat::bytes});
  auto rows = quant_rows({measured(fmt::format(fmt::runtime(block), "opmeter", ""), 40e-6), q});
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].baseline_weight_bytes);
  EXPECT_EQ(*rows[0].baseline_weight_bytes, 64.0 * (192 + 64 + 48 + 48) * 2);
  EXPECT_NE(quant_markdown(rows).find("| 22.46 KiB (0.51x) |"), std::string::npos) << quant_markdown(rows);  // 23000 B
}

// A recipe run with a kernel choice (cuda_quant's ksplit= or operand=) is measured against the
// same baseline as the kernel's own choice, and its row keeps the choice in its shape.
TEST(QuantReport, KernelChoicesShareTheirRecipesBaseline) {
  std::vector<Result> results = {measured("linear/cublaslt/bf16/" + kShape + "/threads=2", 12e-6),
                                 recipe("cuda_quant", "int8wo", 8e-6, 41.0),
                                 recipe("cuda_quant", "int8wo", 6e-6, 41.0, kShape, ",operand=b"),
                                 recipe("cuda_quant", "int4wo-64", 4e-6, 21.0, kShape, ",ksplit=2")};
  auto rows = quant_rows(results);
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, double> speedup;
  for (auto& row : rows) {
    EXPECT_EQ(row.baseline_impl, "cublaslt") << row.shape;
    ASSERT_TRUE(row.speedup) << row.shape;
    speedup[row.shape] = *row.speedup;
  }
  EXPECT_NEAR(speedup.at(kShape), 1.5, 0.01);
  EXPECT_NEAR(speedup.at(kShape + ",operand=b"), 2.0, 0.01);
  EXPECT_NEAR(speedup.at(kShape + ",ksplit=2"), 3.0, 0.01);
  // A float8 training knob is a setting of the recipe too: the step keeps its training baseline.
  auto train = quant_rows({measured("linear/t/bf16/" + kShape + ",mode=train/threads=2", 90e-6),
                           recipe("t", "float8dq-row", 60e-6, 30.0, kShape, ",mode=train,scaling_input=disabled")});
  ASSERT_EQ(train.size(), 1u);
  EXPECT_EQ(train[0].baseline_impl, "t");
  ASSERT_TRUE(train[0].speedup);
  EXPECT_NEAR(*train[0].speedup, 1.5, 0.01);
}

// A recipe or training case that did not finish has no row: the markdown says how many, and why
// is in the results table.
TEST(QuantReport, CasesThatDidNotFinishAreCountedBelowTheTables) {
  auto results = sample_results();
  Result failed = recipe("opmeter_quant", "int4wo-32", 20e-6, 24.0);
  failed.status = Status::failed;
  Result skipped = measured("linear/onednn_train/fp32/" + kShape + ",mode=train/threads=2", 1e-3);
  skipped.status = Status::skipped;
  results.push_back(failed);
  results.push_back(skipped);
  const auto md = markdown_table(results);
  EXPECT_NE(md.find("Not in the recipe and training tables: 2 cases with a recipe or mode=train that did not finish "
                    "(1 failed, crashed or timed out, 1 skipped)"),
            std::string::npos)
      << md;
  EXPECT_EQ(markdown_table(sample_results()).find("Not in the recipe"), std::string::npos);
}

TEST(QuantReport, TrainingStepsCompareWithTrainingBaselines) {
  std::vector<Result> results = {measured("linear/onednn/bf16/" + kShape + "/threads=2", 10e-6),
                                 measured("linear/t/bf16/" + kShape + ",mode=train/threads=2", 90e-6),
                                 recipe("t", "float8dq-row", 60e-6, 30.0, kShape, ",mode=train")};
  auto rows = quant_rows(results);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].mode, "train");
  EXPECT_EQ(rows[0].baseline_impl, "t");  // not the faster inference case
  EXPECT_NEAR(*rows[0].speedup, 1.5, 0.01);
  auto md = quant_markdown(rows);
  EXPECT_NE(md.find("training step: forward + backward"), std::string::npos) << md;
  EXPECT_EQ(md.find("(inference)"), std::string::npos) << md;
  // A step's SQNR is of y as stored, not the inference product's.
  EXPECT_NE(md.find("SQNR: the step's y against fp64"), std::string::npos) << md;
  EXPECT_EQ(md.find("before bias and activation"), std::string::npos) << md;
}

TEST(QuantReport, MarkdownJsonCsvAndChart) {
  auto results = sample_results();
  auto rows = quant_rows(results);
  auto md = quant_markdown(rows);
  EXPECT_NE(md.find("### Quantization recipes (inference)"), std::string::npos) << md;
  EXPECT_NE(md.find("SQNR: the recipe's product x W^T (before bias and activation)"), std::string::npos) << md;
  // Times in a unit that keeps them readable (not 1.6e+04 µs; issue 27 item 13).
  EXPECT_NE(md.find("| int4wo-64 | opmeter_quant | 20.00 us | opmeter | 4.00x | 24.0 |"), std::string::npos) << md;
  auto slow = rows;
  slow[0].time_s = 0.016;
  auto slow_md = quant_markdown(slow);
  EXPECT_NE(slow_md.find("| int4wo-64 | opmeter_quant | 16.000 ms |"), std::string::npos) << slow_md;
  EXPECT_EQ(slow_md.find("e+"), std::string::npos) << slow_md;
  EXPECT_NE(md.find("none measured"), std::string::npos);
  auto j = quant_json(rows);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["recipe"], "int4wo-64");
  EXPECT_TRUE(j[2]["speedup"].is_null());
  auto csv = quant_csv(rows);
  EXPECT_EQ(
      csv.substr(0, csv.find('\n')),
      "device,op,shape,dtype,mode,threads,m,recipe,impl,time_s,baseline_impl,baseline_s,speedup,sqnr_db,max_abs_error,"
      "weight_bytes,baseline_weight_bytes,peak_memory_bytes,flags,run");
  EXPECT_NE(csv.find("cpu,linear,\"batch=1,seq=1,hidden=256,out=512,act=none\",bf16,inference,2,1,int4wo-64,opmeter_quant,2.000"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",opmeter,8.00"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",4,24,,69632,262144,,,threads=2\n"), std::string::npos) << csv;
  auto chart = quantization_chart(results);
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->spec["data"]["values"].size(), 2u);  // rows with a speedup only
  EXPECT_EQ(chart->spec["layer"][0]["encoding"]["x"]["scale"]["type"], "log");
  // Without recipes: no table, no chart.
  std::vector<Result> plain = {results[0], results[1]};
  EXPECT_TRUE(quant_rows(plain).empty());
  EXPECT_FALSE(quantization_chart(plain));
  EXPECT_EQ(quant_markdown(quant_rows(plain)), "");
}

// A recipe's points at several M on one layer are one line: the line's identity leaves out the rows.
TEST(QuantReport, ChartJoinsARecipesPointsAcrossM) {
  auto results = sample_results();
  results.push_back(measured("linear/opmeter/bf16/batch=1,seq=16,hidden=256,out=512,act=none/threads=2", 90e-6));
  results.push_back(recipe("opmeter_quant", "int8wo", 30e-6, 44.0, "batch=1,seq=16,hidden=256,out=512,act=none,mode=train"));
  auto chart = quantization_chart(results);
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->spec["layer"][0]["encoding"]["detail"]["field"], "layer");
  std::vector<nlohmann::json> int8;
  for (auto& v : chart->spec["data"]["values"])
    if (v["recipe"] == "int8wo") int8.push_back(v);
  ASSERT_EQ(int8.size(), 2u) << chart->spec["data"].dump();  // the training step has no training baseline
  EXPECT_EQ(int8[0]["layer"], int8[1]["layer"]);
  EXPECT_NE(int8[0]["m"], int8[1]["m"]);
  EXPECT_EQ(int8[0]["layer"], "linear hidden=256,out=512,act=none bf16 inference cpu opmeter_quant threads=2");
  // The same layer hot is a line of its own.
  results.push_back(measured("linear/opmeter/bf16/" + kShape + "/threads=2,hot", 50e-6));
  results.push_back(measured("linear/opmeter_quant/bf16/" + kShape + ",quant=int8wo/threads=2,hot", 25e-6));
  chart = quantization_chart(results);
  std::set<std::string> lines;
  for (auto& v : chart->spec["data"]["values"])
    if (v["recipe"] == "int8wo") lines.insert(v["layer"].get<std::string>());
  EXPECT_EQ(lines.size(), 2u) << chart->spec["data"].dump();
}

TEST(QuantReport, BrowserDrawsTheSpeedupChart) {
  auto chromium = browser::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium), so the page was not rendered";
  if (chart_libraries().empty()) GTEST_SKIP() << "this build has no chart libraries (-DOPMETER_CHARTS=OFF)";
  auto results = sample_results();
  results.push_back(measured("linear/opmeter/bf16/batch=1,seq=16,hidden=256,out=512,act=none/threads=2", 90e-6));
  ResultSet set{"quant", ResultsFormat::results_json, nlohmann::json::object(), results};
  auto status = browser::render(chromium, html_report({set}), "quant_report");
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  EXPECT_EQ(status["errors"], nlohmann::json::array()) << status.dump(2);
  EXPECT_EQ(status["warnings"], nlohmann::json::array()) << status.dump(2);
  auto chart = quantization_chart(results);
  ASSERT_TRUE(chart);
  ASSERT_TRUE(status["charts"].contains(chart->id)) << status.dump(2);
  auto& drawn = status["charts"][chart->id];
  EXPECT_FALSE(drawn.contains("error")) << drawn.dump();
  EXPECT_GE(drawn.value("marks", 0u), chart->spec["data"]["values"].size()) << drawn.dump();
}

// A hot recipe case is compared with the hot baseline, and says it ran hot.
TEST(QuantReport, HotRecipesCompareWithHotBaselines) {
  auto results = sample_results();
  results.push_back(measured("linear/opmeter_quant/bf16/" + kShape + ",quant=int4wo-64/threads=2,hot", 5e-6));
  auto rows = quant_rows(results);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[3].where, "cpu x2, hot");
  ASSERT_TRUE(rows[3].speedup);
  EXPECT_NEAR(*rows[3].speedup, 10.0 / 5.0, 1e-9);
  EXPECT_NEAR(*rows[0].speedup, 4.0, 0.02);  // the cold row keeps its cold baseline
  EXPECT_NE(quant_markdown(rows).find("| bf16 | cpu x2, hot | int4wo-64 |"), std::string::npos) << quant_markdown(rows);
}

// m is the layer's rows, batch x seq; peak memory is the recipe's own result's, in every output.
TEST(QuantReport, RowsAreBatchTimesSeqAndPeakMemoryIsTheRecipesOwn) {
  const std::string shape = "batch=2,seq=8,hidden=256,out=512,act=none";
  Result base = measured("linear/opmeter/bf16/" + shape + "/threads=2", 80e-6);
  base.peak_memory_bytes = 999999;
  Result q = recipe("opmeter_quant", "int4wo-64", 20e-6, 24.0, shape);
  q.peak_memory_bytes = 123456;
  auto rows = quant_rows({base, q});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].m, 16);
  ASSERT_TRUE(rows[0].peak_memory_bytes);
  EXPECT_EQ(*rows[0].peak_memory_bytes, 123456u);
  EXPECT_NE(quant_csv(rows).find(",123456,,threads=2\n"), std::string::npos) << quant_csv(rows);
  EXPECT_EQ(quant_json(rows)[0]["peak_memory_bytes"], 123456);
  EXPECT_EQ(quant_json(rows)[0]["m"], 16);
  EXPECT_NE(quant_markdown(rows).find("| 120.56 KiB |"), std::string::npos) << quant_markdown(rows);
  auto chart = quantization_chart({base, q});
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->spec["data"]["values"][0]["m"], 16);
  EXPECT_NEAR(chart->spec["data"]["values"][0]["speedup"].get<double>(), 4.0, 0.02);
}

// A speedup over a baseline measured while others took its CPUs (or a recipe's that was) is
// doubtful: the row carries both results' flags, the baseline's marked so.
TEST(QuantReport, RowsCarryTheirAndTheirBaselinesDoubtfulFlags) {
  Result base = measured("linear/opmeter/bf16/" + kShape + "/threads=2", 10e-3);
  base.add_flag("contended");
  base.add_flag("high-noise-note");  // not one that makes a speedup doubtful
  Result q = recipe("opmeter_quant", "int8wo", 6e-6, 41.0);
  q.add_flag("partly-cached");
  auto rows = quant_rows({base, q});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].flags, (std::vector<std::string>{"partly-cached", "baseline:contended"}));
  EXPECT_NE(quant_markdown(rows).find("| partly-cached, baseline:contended |"), std::string::npos)
      << quant_markdown(rows);
  EXPECT_NE(quant_csv(rows).find(",partly-cached baseline:contended,threads=2\n"), std::string::npos)
      << quant_csv(rows);
  EXPECT_EQ(quant_json(rows)[0]["flags"].size(), 2u);
  auto clean = quant_rows(sample_results());
  EXPECT_TRUE(clean[0].flags.empty());
  EXPECT_NE(quant_markdown(clean).find("| 24.0 |  | 68.00 KiB (0.27x) |  | - |"), std::string::npos)
      << quant_markdown(clean);
}
