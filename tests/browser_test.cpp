// The HTML report rendered by a real browser: headless Chromium, offline, reading back how each
// chart drew (the page records it in #render-status).
#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "report/charts.hpp"
#include "report/report.hpp"
#include "report/chart_assets.hpp"
#include "tests/browser_render.hpp"
#include "tests/pipeline_fixtures.hpp"
#include "tests/report_fixture.hpp"

using namespace opmeter;
using opmeter::browser::find_chromium;
using opmeter::browser::render;

namespace {

constexpr const char* kNoCharts =
    "this build has no chart libraries (-DOPMETER_CHARTS=OFF): no chart can draw; the report says so instead "
    "(HtmlReport.SelfContainedWithEveryChartAndCase checks that)";

}  // namespace

TEST(Browser, EveryChartDrawsMarksWithoutConsoleErrors) {
  auto chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "Chromium is not installed (Debian package chromium; scripts/install-deps.sh installs it), "
                    "so the HTML report was not rendered";
  if (chart_libraries().empty()) GTEST_SKIP() << kNoCharts;
  auto set = fixtures::report_set();
  auto charts = report_charts(set.results);
  ASSERT_GE(charts.size(), 6u);
  const std::string dom = browser::render_dom(chromium, html_report({set}), "all_charts");
  auto status = browser::render_status(dom);
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  // Each chart's menu saves PNG and SVG, and has no "View Source": vega-embed writes the spec
  // unescaped into a same-origin popup, and the specs carry text from results files.
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = dom.find(what); at != std::string::npos; at = dom.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(">Save as PNG<"), charts.size());
  EXPECT_EQ(count(">Save as SVG<"), charts.size());
  EXPECT_EQ(count(">View Source<"), 0u);  // a link's text (the inlined library names it too)
  EXPECT_EQ(count(">View Compiled Vega<"), 0u);
  EXPECT_EQ(count(">Open in Vega Editor<"), 0u);
  EXPECT_EQ(status["errors"], nlohmann::json::array()) << status.dump(2);
  EXPECT_EQ(status["warnings"], nlohmann::json::array()) << status.dump(2);
  for (auto& c : charts) {
    ASSERT_TRUE(status["charts"].contains(c.id)) << c.id << " was not drawn: " << status.dump(2);
    auto& drawn = status["charts"][c.id];
    EXPECT_FALSE(drawn.contains("error")) << c.id << ": " << drawn.dump();
    // At least one mark per data row (lines draw one item per point, facets one per cell).
    std::size_t rows = c.spec.contains("data") ? c.spec["data"]["values"].size() : 1;
    EXPECT_GE(drawn.value("marks", 0u), rows) << c.id << ": " << drawn.dump();
  }
}

TEST(Browser, ABrokenSpecIsReportedOnThePage) {
  auto chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium)";
  if (chart_libraries().empty()) GTEST_SKIP() << kNoCharts;
  // The page's check must notice a chart that cannot be drawn: the roofline's points get an
  // unknown mark type after generation.
  auto set = fixtures::report_set();
  auto html = html_report({set});
  const std::string point = "\"type\":\"point\"";
  auto at = html.find(point);
  ASSERT_NE(at, std::string::npos);
  html.replace(at, point.size(), "\"type\":\"nosuchmark\"");
  auto status = render(chromium, html, "broken");
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  EXPECT_TRUE(status["charts"]["roofline"].contains("error")) << status.dump(2);
  EXPECT_FALSE(status["errors"].empty());
}

// A canvas over the browser's limit draws as a broken image with no error: the page's check
// counts it as a chart that was not drawn. And a random shapes sweep, which made such a canvas
// as a heatmap, draws as a scatter.
TEST(Browser, ACanvasOverTheBrowsersLimitIsAnError) {
  auto chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium)";
  if (chart_libraries().empty()) GTEST_SKIP() << kNoCharts;
  auto set = fixtures::report_set();
  auto html = html_report({set});
  const std::string step = "\"height\":{\"step\":26}";
  auto at = html.find(step);
  ASSERT_NE(at, std::string::npos);
  html.replace(at, step.size(), "\"height\":{\"step\":4000}");  // 4 K x 3 M x 4000 px: 48000 px tall
  auto status = render(chromium, html, "huge_canvas");
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  ASSERT_TRUE(status["charts"]["gemm-heatmap"].contains("error")) << status.dump(2);
  EXPECT_NE(status["charts"]["gemm-heatmap"]["error"].get<std::string>().find("over the browser's canvas limit"),
            std::string::npos);
  EXPECT_FALSE(status["charts"]["roofline"].contains("error"));

  ResultSet sweep{"rnd", ResultsFormat::results_jsonl, nlohmann::json::object(), {}};
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> size(16, 4096);
  for (int i = 0; i < 240; ++i) {
    const int m = size(rng), n = size(rng), k = size(rng);
    auto w = fixtures::gemm_work(m, n, k);
    sweep.results.push_back(fixtures::measured(fmt::format("gemm/onednn/fp32/M={},N={},K={}/threads=2", m, n, k),
                                               fixtures::time_at(w, 80), w));
  }
  auto drawn = render(chromium, html_report({sweep}), "random_shapes");
  ASSERT_TRUE(drawn.value("done", false)) << drawn.dump(2);
  EXPECT_EQ(drawn["errors"], nlohmann::json::array()) << drawn.dump(2);
  EXPECT_GE(drawn["charts"]["gemm-heatmap"].value("marks", 0u), 240u) << drawn.dump(2);
}

TEST(Browser, UnreadableSpecsStillFinishWithAnError) {
  auto chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium)";
  auto html = html_report({fixtures::report_set()});
  auto at = html.find("id=\"chart-specs\">");
  ASSERT_NE(at, std::string::npos);
  html.insert(at + 18, "{not json");
  auto status = render(chromium, html, "unreadable");
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  ASSERT_FALSE(status["errors"].empty());
  EXPECT_NE(status["errors"][0].get<std::string>().find("chart specs"), std::string::npos) << status.dump(2);
}

TEST(Browser, PipelineChartsDraw) {
  auto chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium)";
  if (chart_libraries().empty()) GTEST_SKIP() << kNoCharts;
  std::vector<pipeline::PipelineSummary> pipelines;
  auto h = fixtures::hand_run();
  Result model = fixtures::hand_result("model", 5e-3, 0.4);
  h.run.end_to_end = &model;
  pipelines.push_back(pipeline::summarize(h.run));
  pipelines.push_back(fixtures::many_layer_summary(30));
  ResultSet empty{"x", ResultsFormat::results_jsonl, nlohmann::json::object(), {}};
  auto html = html_report({empty}, pipelines);
  auto status = render(chromium, html, "pipelines");
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  EXPECT_EQ(status["errors"], nlohmann::json::array()) << status.dump(2);
  EXPECT_EQ(status["warnings"], nlohmann::json::array()) << status.dump(2);
  for (const char* id : {"pipeline-comparison", "pipeline-end-to-end", "pipeline-0-toy", "pipeline-1-deep"}) {
    ASSERT_TRUE(status["charts"].contains(id)) << id << " was not drawn: " << status.dump(2);
    EXPECT_FALSE(status["charts"][id].contains("error")) << id << ": " << status["charts"][id].dump();
    EXPECT_GT(status["charts"][id].value("marks", 0u), 0u) << id;
  }
  // Every segment of both bars of the deep pipeline: 8 layers and 3 op groups each.
  EXPECT_GE(status["charts"]["pipeline-1-deep"].value("marks", 0u), 22u) << status.dump(2);
}

// Clicking a number column's header sorts the cases by value, both ways, and a case with no value
// there (failed: its reason spans the columns; skipped) stays last.
TEST(Browser, CaseTableSortsByNumber) {
  auto chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium)";
  auto gemm = [](int m) { return fmt::format("gemm/onednn/fp32/M={},N=64,K=64/threads=2", m); };
  ResultSet set{"x",
                ResultsFormat::results_jsonl,
                nlohmann::json::object(),
                {fixtures::measured(gemm(8), 3e-5), fixtures::with_status(gemm(16), Status::failed, "wrong result"),
                 fixtures::measured(gemm(32), 1e-6), fixtures::measured(gemm(64), 2e-4)}};
  auto html = html_report({set});
  // After the page's own scripts: click "median" once, then again, writing the order after each.
  const std::string clicks = R"js(<script>
const th = Array.from(document.querySelectorAll('#cases th')).find((t) => t.textContent === 'median');
const order = () => Array.from(document.querySelectorAll('#cases tbody tr')).map((r) => r.cells[0].textContent.match(/M=(\d+)/)[1]).join(' ');
const note = (id) => { const p = document.createElement('pre'); p.id = id; p.textContent = order(); document.body.append(p); };
th.click(); note('up');
th.click(); note('down');
</script></body>)js";
  html.replace(html.rfind("</body>"), 7, clicks);
  auto dom = browser::render_dom(chromium, html, "sort");
  auto text = [&](const std::string& id) {
    auto at = dom.find("<pre id=\"" + id + "\">");
    if (at == std::string::npos) return std::string("(none)");
    at = dom.find('>', at) + 1;
    return dom.substr(at, dom.find("</pre>", at) - at);
  };
  EXPECT_EQ(text("up"), "32 8 64 16");
  EXPECT_EQ(text("down"), "64 8 32 16");
}
