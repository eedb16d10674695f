// The model report from a hand-built model: which charts it draws and from what rows, what the
// markdown and HTML say per group, and the page drawn by a real browser.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "tests/browser_render.hpp"
#include "predict/report.hpp"
#include "predict/report_parts.hpp"
#include "report/chart_assets.hpp"

using namespace opmeter;
using namespace opmeter::predict;
using nlohmann::json;

namespace {

ErrorStats stats(double median, double p90, double lo, double hi, double coverage, std::size_t n) {
  ErrorStats e;
  e.n = n;
  e.median_ape = median;
  e.p90_ape = p90;
  e.mean_ape = median;
  e.max_ape = p90 * 1.5;
  e.lo = lo;
  e.hi = hi;
  e.coverage = coverage;
  return e;
}

// Two groups: a GEMM with all four models (its forest missed one case), and a memory-bound op whose
// learned models were not fitted. Every add case is in one bytes bin, its analytic errors known.
PredictModel sample_model() {
  PredictModel m;
  m.created = "2026-01-02T03:04:05Z";
  m.context = {{"cpu", {{"model", "Test CPU <model>"}}}, {"host_name", "box"}};
  m.sources = {"runs/a/results.json", "runs/b/results.json"};
  m.folds = 5;
  Ceilings c;
  c.peak_gflops = {{"fp32", 512}};
  c.memory_gbps = 40;
  c.source = "calibration profile cal.json";
  m.ceilings["cpu"] = c;

  GroupModel gemm;
  gemm.key = "cpu/gemm/onednn/fp32";
  gemm.device = "cpu", gemm.op = "gemm", gemm.impl = "onednn";
  for (int i = 0; i < 10; ++i) {
    TrainingPoint p;
    int n = 64 << (i % 5);
    p.case_string = fmt::format("gemm/onednn/fp32/M={0},N={0},K={0}/threads=2", n);
    p.flops = 2.0 * n * n * n;
    p.bytes = 12.0 * n * n;
    p.measured_s = p.flops / 200e9;
    p.fold = i % 5;
    p.predicted_s = {{ModelKind::roofline, p.measured_s * 0.4},
                     {ModelKind::analytic, p.measured_s * 1.1},
                     {ModelKind::boosted, p.measured_s * 1.05},
                     {ModelKind::forest, i == 3 ? 0.0 : p.measured_s * 0.9}};
    gemm.points.push_back(p);
  }
  gemm.cv[ModelKind::roofline] = stats(0.6, 0.62, 2.4, 2.6, 0.8, 10);
  gemm.cv[ModelKind::analytic] = stats(0.1, 0.1, 0.88, 0.95, 0.9, 10);
  gemm.cv[ModelKind::boosted] = stats(0.052, 0.12, 0.9, 1.15, 0.91, 10);
  gemm.cv[ModelKind::forest] = stats(0.1, 0.11, 1.05, 1.2, 0.7, 10);
  gemm.cv[ModelKind::boosted].worst = {{"gemm/onednn/fp32/M=1024,N=1024,K=1024/threads=2", 2e-3, 2.3e-3, 0.15}};
  gemm.best = ModelKind::boosted;
  m.groups.push_back(gemm);

  GroupModel add;
  add.key = "cpu/add/opmeter/fp32";
  add.device = "cpu", add.op = "add", add.impl = "opmeter";
  for (int i = 0; i < 6; ++i) {
    TrainingPoint p;
    p.case_string = fmt::format("add/opmeter/fp32/n={}/threads=2", 1000 + i);
    p.bytes = 1.5 * (1 << 20) + i;  // all in bin 20
    p.measured_s = 1e-4 * (i + 1);
    p.fold = i % 5;
    p.predicted_s = {{ModelKind::roofline, p.measured_s * 0.5}, {ModelKind::analytic, p.measured_s * (1.1 + 0.1 * i)}};
    add.points.push_back(p);
  }
  add.cv[ModelKind::roofline] = stats(0.5, 0.5, 1.9, 2.1, 0.85, 6);
  add.cv[ModelKind::analytic] = stats(0.35, 0.55, 0.6, 0.95, 0.5, 6);
  add.best = ModelKind::analytic;
  m.groups.push_back(add);
  m.notes = {"cpu/relu/opmeter/fp32: 3 cases; 5 folds need at least 5, so it has no model"};
  return m;
}

const Chart* find_chart(const std::vector<Chart>& charts, const std::string& kind) {
  for (auto& c : charts)
    if (c.kind == kind) return &c;
  return nullptr;
}

std::map<std::string, int> count_by(const json& values, const std::string& key, const std::string& row_key = "",
                                    const std::string& row = "") {
  std::map<std::string, int> out;
  for (auto& v : values)
    if (row_key.empty() || v.value(row_key, "") == row) ++out[v[key].get<std::string>()];
  return out;
}

const json* find_row(const json& values, std::initializer_list<std::pair<const char*, json>> match) {
  for (auto& v : values) {
    bool all = true;
    for (auto& [k, want] : match) all = all && v.contains(k) && v[k] == want;
    if (all) return &v;
  }
  return nullptr;
}

}  // namespace

TEST(PredictReport, ChartsOfEachKindInOrder) {
  auto charts = model_charts(sample_model());
  std::vector<std::string> kinds;
  std::set<std::string> ids;
  for (auto& c : charts) {
    kinds.push_back(c.kind);
    ids.insert(c.id);
    EXPECT_EQ(c.spec["$schema"], kVegaLiteSchema) << c.id;
    EXPECT_FALSE(c.title.empty());
    EXPECT_FALSE(c.caption.empty());
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"predict-scatter", "predict-error-op", "predict-error-size", "predict-coverage"}));
  EXPECT_EQ(ids.size(), charts.size());
}

TEST(PredictReport, ScatterHasEveryHeldOutPointPerModelAndTheGuides) {
  auto charts = model_charts(sample_model());
  auto* c = find_chart(charts, "predict-scatter");
  ASSERT_NE(c, nullptr);
  auto& values = c->spec["data"]["values"];
  // gemm: 10 cases x 4 models, less the forest's zero prediction; add: 6 cases x 2 models.
  EXPECT_EQ(count_by(values, "model", "row", "point"),
            (std::map<std::string, int>{{"roofline", 16}, {"analytic", 16}, {"boosted", 10}, {"forest", 9}}));
  EXPECT_EQ(count_by(values, "group", "row", "point"),
            (std::map<std::string, int>{{"cpu/gemm/onednn/fp32", 39}, {"cpu/add/opmeter/fp32", 12}}));
  // Guides: y = x and +-25% in each model's panel, each a line of two rows over the whole range.
  EXPECT_EQ(count_by(values, "guide", "row", "guide"), (std::map<std::string, int>{{"y = x", 8}, {"+25%", 8}, {"-25%", 8}}));
  for (auto& v : values)
    if (v["row"] == "guide" && v["guide"] == "y = x") {
      EXPECT_DOUBLE_EQ(v["measured_ms"].get<double>(), v["predicted_ms"].get<double>());
    }
  const json* p = find_row(values, {{"row", "point"}, {"model", "roofline"},
                                    {"case", "gemm/onednn/fp32/M=128,N=128,K=128/threads=2"}});
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR((*p)["error_pct"].get<double>(), 60, 1e-9);
  EXPECT_NEAR((*p)["measured_ms"].get<double>(), 2.0 * 128 * 128 * 128 / 200e9 * 1e3, 1e-12);

  auto& spec = c->spec;
  EXPECT_EQ(spec["facet"]["field"], "model");
  auto& layers = spec["spec"]["layer"];
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0]["mark"]["type"], "line");
  EXPECT_EQ(layers[0]["transform"][0]["filter"]["equal"], "guide");
  EXPECT_EQ(layers[1]["mark"]["type"], "point");
  EXPECT_EQ(layers[1]["encoding"]["color"]["field"], "group");
  EXPECT_EQ(layers[1]["encoding"]["x"]["scale"]["type"], "log");
  EXPECT_EQ(layers[1]["encoding"]["y"]["scale"]["type"], "log");
  std::set<std::string> tooltip;
  for (auto& t : layers[1]["encoding"]["tooltip"]) tooltip.insert(t["field"]);
  for (const char* f : {"case", "measured_ms", "predicted_ms", "error_pct"}) EXPECT_TRUE(tooltip.count(f)) << f;
}

TEST(PredictReport, ErrorByOpIsTheHeldOutStatsOfEachFittedModel) {
  auto charts = model_charts(sample_model());
  auto* c = find_chart(charts, "predict-error-op");
  ASSERT_NE(c, nullptr);
  auto& values = c->spec["data"]["values"];
  EXPECT_EQ(values.size(), 6u);  // gemm: 4 models, add: 2
  const json* row = find_row(values, {{"group", "cpu/gemm/onednn/fp32"}, {"model", "boosted"}});
  ASSERT_NE(row, nullptr);
  EXPECT_NEAR((*row)["median_pct"].get<double>(), 5.2, 1e-9);
  EXPECT_NEAR((*row)["p90_pct"].get<double>(), 12, 1e-9);
  EXPECT_EQ((*row)["best"], "best");
  EXPECT_EQ(c->spec["layer"][0]["encoding"]["x"]["scale"]["type"], "log");
}

TEST(PredictReport, ErrorBySizeBinsFlopsAndBytes) {
  auto charts = model_charts(sample_model());
  auto* c = find_chart(charts, "predict-error-size");
  ASSERT_NE(c, nullptr);
  auto& values = c->spec["data"]["values"];
  EXPECT_EQ(count_by(values, "measure"), (std::map<std::string, int>{{"FLOPs", 40}, {"bytes", 4}}));
  // The add cases: one bin of 2^20 bytes; analytic errors 10%, 20%, ... 60%.
  const json* median = find_row(values, {{"model", "analytic"}, {"measure", "bytes"}, {"log2", 20}, {"stat", "median"}});
  const json* p90 = find_row(values, {{"model", "analytic"}, {"measure", "bytes"}, {"log2", 20}, {"stat", "p90"}});
  ASSERT_NE(median, nullptr);
  ASSERT_NE(p90, nullptr);
  EXPECT_NEAR((*median)["pct"].get<double>(), 35, 1e-9);
  EXPECT_NEAR((*p90)["pct"].get<double>(), 55, 1e-9);
  EXPECT_EQ((*median)["n"], 6);
  // A GEMM of 2 * 64^3 FLOPs is in bin 19; each bin holds the two cases of that size.
  const json* gemm = find_row(values, {{"model", "roofline"}, {"measure", "FLOPs"}, {"log2", 19}, {"stat", "median"}});
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ((*gemm)["n"], 2);
  EXPECT_NEAR((*gemm)["pct"].get<double>(), 60, 1e-9);
}

TEST(PredictReport, CoverageBarsWithTheNominalLine) {
  auto charts = model_charts(sample_model());
  auto* c = find_chart(charts, "predict-coverage");
  ASSERT_NE(c, nullptr);
  auto& values = c->spec["data"]["values"];
  EXPECT_EQ(values.size(), 6u);
  const json* row = find_row(values, {{"group", "cpu/add/opmeter/fp32"}, {"model", "analytic"}});
  ASSERT_NE(row, nullptr);
  EXPECT_NEAR((*row)["coverage_pct"].get<double>(), 50, 1e-9);
  EXPECT_EQ((*row)["interval"], "-40% / -5%");
  auto& layers = c->spec["layer"];
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0]["mark"]["type"], "bar");
  EXPECT_EQ(layers[1]["mark"]["type"], "rule");
  EXPECT_EQ(layers[1]["data"]["values"][0]["nominal_pct"], 90.0);
}

TEST(PredictReport, MarkdownTablesPerGroup) {
  auto md = model_markdown(sample_model());
  EXPECT_EQ(md.rfind("# opmeter predict: Test CPU &lt;model&gt;\n", 0), 0u) << md;
  EXPECT_NE(md.find("5-fold cross-validation"), std::string::npos);
  EXPECT_NE(md.find("`runs/a/results.json`, `runs/b/results.json`"), std::string::npos);
  EXPECT_NE(md.find("| cpu | fp32 512 | 40.0 | calibration profile cal.json |"), std::string::npos) << md;
  // The summary: each group's best model.
  EXPECT_NE(md.find("| cpu/gemm/onednn/fp32 | 10 | boosted | 5.2% | 12.0% | -10% / +15% | 91% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| cpu/add/opmeter/fp32 | 6 | analytic | 35.0% | 55.0% | -40% / -5% | 50% |"), std::string::npos) << md;
  // Each group's four models.
  EXPECT_NE(md.find("## cpu/gemm/onednn/fp32\n\n10 cases."), std::string::npos);
  EXPECT_NE(md.find("| roofline | 60.0% | 62.0% | +140% / +160% | 80% |  |"), std::string::npos) << md;
  EXPECT_NE(md.find("| boosted | 5.2% | 12.0% | -10% / +15% | 91% | **best** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| forest | 10.0% | 11.0% | +5% / +20% | 70% |  |"), std::string::npos) << md;
  EXPECT_NE(md.find("| boosted | - | - | - | - | not fitted |"), std::string::npos) << md;
  std::size_t best = 0;
  for (auto at = md.find("**best**"); at != std::string::npos; at = md.find("**best**", at + 1)) ++best;
  EXPECT_EQ(best, 2u) << "one best per group";
  EXPECT_NE(md.find("| analytic | 35.0% | 55.0% | -40% / -5% | 50% | **best** |"), std::string::npos) << md;
  // Worst cases: the fit's list when it has one, else the largest errors among the points.
  EXPECT_NE(md.find("Worst cases of the best model (boosted):"), std::string::npos);
  EXPECT_NE(md.find("| `gemm/onednn/fp32/M=1024,N=1024,K=1024/threads=2` | 2.000 ms | 2.300 ms | 15.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("Worst cases of the best model (analytic):"), std::string::npos);
  auto worst_add = md.find("| `add/opmeter/fp32/n=1005/threads=2` |");
  EXPECT_NE(worst_add, std::string::npos) << md;
  EXPECT_LT(worst_add, md.find("| `add/opmeter/fp32/n=1004/threads=2` |"));
  EXPECT_NE(md.find("## Notes\n\n- cpu/relu/opmeter/fp32: 3 cases"), std::string::npos);
}

// Names from results files (impls, devices, case strings, the ceilings' source) stay one cell of
// one line in model.md, with no tags for renderers that pass HTML through.
TEST(PredictReport, MarkdownEscapesNamesFromResults) {
  auto m = sample_model();
  m.groups[0].key = "cpu/gemm/<b>x|y</b>/fp32";
  auto& worst = m.groups[0].cv[m.groups[0].best].worst;
  ASSERT_FALSE(worst.empty());
  worst[0].case_string = "gemm/a|b`c/fp32/M=1,N=1,K=1/threads=2";
  m.ceilings["cpu"].source = "profile\n## injected";
  auto md = model_markdown(m);
  EXPECT_NE(md.find("| cpu/gemm/&lt;b&gt;x/y&lt;/b&gt;/fp32 | 10 | "), std::string::npos) << md;
  EXPECT_NE(md.find("## cpu/gemm/&lt;b&gt;x/y&lt;/b&gt;/fp32\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| profile ## injected |"), std::string::npos) << md;
  EXPECT_EQ(md.find("\n## injected"), std::string::npos) << md;
  EXPECT_NE(md.find("| `gemm/a/b'c/fp32/M=1,N=1,K=1/threads=2` |"), std::string::npos) << md;  // a code span
  EXPECT_EQ(md.find("<b>"), std::string::npos) << md;
}

TEST(PredictReport, HtmlIsSelfContainedWithEveryChartAndTable) {
  auto m = sample_model();
  auto html = model_html(m);
  EXPECT_NE(html.find("<title>opmeter predict: Test CPU &lt;model&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<h1>opmeter predict: Test CPU &lt;model&gt;</h1>"), std::string::npos);
  EXPECT_EQ(html.find("Test CPU <model>"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)")));
  EXPECT_EQ(chart_libraries().empty(), html.find("/* vega-lite ") == std::string::npos);
  for (auto& c : model_charts(m)) EXPECT_NE(html.find("<div class=\"chart\" id=\"" + c.id + "\">"), std::string::npos) << c.id;
  EXPECT_NE(html.find("<script type=\"application/json\" id=\"chart-specs\">[{\"id\":\"predict-scatter\""), std::string::npos);
  // Tables: the summary, each group's models with the best marked, a row per held-out case.
  EXPECT_NE(html.find("<a href=\"#group-cpu/gemm/onednn/fp32\">cpu/gemm/onednn/fp32</a>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"best\"><td>boosted</td><td class=\"num\">5.2%</td><td class=\"num\">12.0%</td>"
                      "<td class=\"num\">-10% / +15%</td><td class=\"num\">91%</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>forest</td><td class=\"muted\" colspan=\"5\">not fitted</td></tr>"), std::string::npos);
  std::size_t case_rows = 0;
  for (auto at = html.find("<tr><td class=\"case\">"); at != std::string::npos; at = html.find("<tr><td class=\"case\">", at + 1))
    ++case_rows;
  EXPECT_EQ(case_rows, 16u + 1u + 5u);  // every point, then the worst cases: the fit's 1 (gemm), the 5 largest (add)
  EXPECT_NE(html.find("<li>cpu/relu/opmeter/fp32: 3 cases"), std::string::npos);
  EXPECT_NE(html.find("id=\"case-filter\""), std::string::npos);
}

TEST(PredictReport, AModelWithoutGroupsSaysSo) {
  PredictModel m;
  m.context = {{"cpu", {{"model", "Test CPU"}}}};
  m.notes = {"cpu/gemm/onednn/fp32: 3 cases; 5 folds need at least 5"};
  EXPECT_TRUE(model_charts(m).empty());
  auto md = model_markdown(m);
  EXPECT_NE(md.find("# opmeter predict: Test CPU"), std::string::npos);
  EXPECT_NE(md.find("No group was fitted"), std::string::npos);
  EXPECT_NE(md.find("- cpu/gemm/onednn/fp32: 3 cases"), std::string::npos);
  auto html = model_html(m);
  EXPECT_NE(html.find("No group was fitted"), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-specs\">[]</script>"), std::string::npos);
  EXPECT_EQ(html.find("class=\"chart\""), std::string::npos);
}

TEST(PredictReport, MachineNameFromTheGroupsDevices) {
  PredictModel m;
  EXPECT_EQ(report_parts::machine_name(m), "unknown machine");
  m.context = {{"cpu", {{"model", "Xeon"}}},
               {"gpus", json::array({{{"device", "cuda:0"}, {"name", "NVIDIA H100"}}, {{"device", "cuda:1"}, {"name", "NVIDIA H100"}}})}};
  EXPECT_EQ(report_parts::machine_name(m), "Xeon");  // no groups: the CPU
  GroupModel g;
  g.device = "cuda:0";
  m.groups.push_back(g);
  EXPECT_EQ(report_parts::machine_name(m), "NVIDIA H100");
  g.device = "cuda:1";
  m.groups.push_back(g);
  g.device = "cpu";
  m.groups.push_back(g);
  EXPECT_EQ(report_parts::machine_name(m), "Xeon + NVIDIA H100");
  g.device = "cuda:7";  // not in the context: the device itself
  m.groups.push_back(g);
  EXPECT_EQ(report_parts::machine_name(m), "Xeon + NVIDIA H100 + cuda:7");
}

TEST(PredictReport, BrowserDrawsEveryChartWithoutErrors) {
  auto chromium = browser::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium), so the page was not rendered";
  if (chart_libraries().empty()) GTEST_SKIP() << "this build has no chart libraries (-DOPMETER_CHARTS=OFF)";
  auto m = sample_model();
  auto status = browser::render(chromium, model_html(m), "predict_report");
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  EXPECT_EQ(status["errors"], json::array()) << status.dump(2);
  EXPECT_EQ(status["warnings"], json::array()) << status.dump(2);
  for (auto& c : model_charts(m)) {
    ASSERT_TRUE(status["charts"].contains(c.id)) << c.id << " was not drawn: " << status.dump(2);
    auto& drawn = status["charts"][c.id];
    EXPECT_FALSE(drawn.contains("error")) << c.id << ": " << drawn.dump();
    // At least a mark per data row: a point each, a line per guide, a bar or dot per row.
    std::size_t rows = c.spec["data"]["values"].size();
    if (c.kind == "predict-scatter") rows -= 24 - 12;  // 24 guide rows draw 12 lines
    EXPECT_GE(drawn.value("marks", 0u), rows) << c.id << ": " << drawn.dump();
  }
}

// `opmeter predict`'s error against measured times, on hand-made predictions (times in ms):
//   a: measured 1.0, predicted 1.1 (|1.1 - 1| / 1 = 10%),   interval 0.9 .. 1.2: inside;
//   b: measured 2.0, predicted 1.5 (|1.5 - 2| / 2 = 25%),   interval 1.6 .. 1.9: outside;
//   c: not measured: left out.
// Best model: median of {10%, 25%} = 17.5%; p90 by linear interpolation 10 + 0.9 x 15 = 23.5%;
// 1 of 2 inside. Each model's own (uncorrected) predictions: roofline 0.5 and 1.0 (50%, 50%:
// median 50%), analytic 1.0 and 2.2 (0%, 10%: median 5%).
TEST(PredictMeasuredError, SummaryOfHandMadePredictions) {
  auto prediction = [](const char* name, double time_ms, double lo_ms, double hi_ms, std::optional<double> measured_ms,
                       double roofline_ms, double analytic_ms) {
    Prediction p;
    p.case_string = name;
    p.time_s = time_ms * 1e-3;
    p.lo_s = lo_ms * 1e-3;
    p.hi_s = hi_ms * 1e-3;
    if (measured_ms) p.measured_s = *measured_ms * 1e-3;
    p.by_model = {{ModelKind::roofline, roofline_ms * 1e-3}, {ModelKind::analytic, analytic_ms * 1e-3}};
    return p;
  };
  const std::vector<Prediction> cases = {prediction("a", 1.1, 0.9, 1.2, 1.0, 0.5, 1.0),
                                         prediction("b", 1.5, 1.6, 1.9, 2.0, 1.0, 2.2),
                                         prediction("c", 9.0, 8.0, 10.0, std::nullopt, 1.0, 9.0)};
  EXPECT_EQ(measured_error_summary(cases, {}),
            "\nError against the measured times (2 cases): the predictions (each group's best model scaled by its "
            "held-out median of measured / predicted, the × in the model column) median 17.5%, p90 23.5%, 50.0% "
            "inside the interval; each model unscaled: roofline median 50.0%; analytic median 5.0%\n");
  // A case the model was fitted on is named: its error is not held out.
  EXPECT_EQ(measured_error_summary(cases, {"a", "c"}),
            "\nError against the measured times (2 cases): the predictions (each group's best model scaled by its "
            "held-out median of measured / predicted, the × in the model column) median 17.5%, p90 23.5%, 50.0% "
            "inside the interval; each model unscaled: roofline median 50.0%; analytic median 5.0%. 1 of these cases "
            "is in the model's "
            "training data: its error is not a held-out error (predict fit reports that)\n");
  EXPECT_EQ(measured_error_summary({cases[2]}, {}), "");  // nothing measured
}
