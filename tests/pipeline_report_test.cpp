// The report's Pipelines section: charts (stacked layer bars, comparison, end to end), tables,
// escaping, markdown, `opmeter report DIR` with pipelines.json, and the page drawn by Chromium.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipeline/present/pipeline_outputs.hpp"
#include "report/chart_assets.hpp"
#include "report/pipeline_charts.hpp"
#include "report/pipeline_labels.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/pipeline_fixtures.hpp"
#include "tests/report_fixture.hpp"

using namespace opmeter;
using namespace opmeter::pipeline;
namespace fs = std::filesystem;

namespace {

// A complete pipeline with the model end to end, an incomplete one, and a 12-layer one.
std::vector<PipelineSummary> summaries() {
  std::vector<PipelineSummary> out;
  auto h = fixtures::hand_run();
  Result model = fixtures::hand_result("model", 5e-3, 0.4);
  h.run.end_to_end = &model;
  out.push_back(summarize(h.run));
  auto broken = fixtures::hand_run();
  broken.run.pipeline.name = "broken";
  broken.results[1].status = Status::skipped;
  broken.results[1].reason = "needs <64 GiB> of memory";
  out.push_back(summarize(broken.run));
  out.push_back(fixtures::many_layer_summary(12));
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(PipelineCharts, StackedBarsTopLayersThenTheRestByOp) {
  auto deep = fixtures::many_layer_summary(12);
  auto chart = pipeline_layers_chart(deep, 2, 8);
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->id, "pipeline-2-deep");
  EXPECT_EQ(chart->kind, "pipeline-layers");
  auto& values = chart->spec["data"]["values"];
  std::vector<std::string> latency;
  double total_ms = 0;
  for (auto& v : values)
    if (v["bar"] == "latency") {
      latency.push_back(v["segment"]);
      total_ms += v["value"].get<double>();
    }
  // Layers 11..4 are the largest eight; the rest (0..3: conv2d 0 and 3, relu 1, add 2) by op.
  ASSERT_EQ(latency.size(), 8u + 3u);
  EXPECT_EQ(latency[0], "<b>head</b> & \"x\"");
  EXPECT_EQ(latency[1], "layer10");
  EXPECT_EQ(latency[7], "layer4");
  EXPECT_EQ(latency[8], "other conv2d (2 layers)");  // 0.1 + 0.4 ms
  EXPECT_EQ(latency[9], "other add (1 layer)");      // 0.3 ms
  EXPECT_EQ(latency[10], "other relu (1 layer)");    // 0.2 ms
  EXPECT_NEAR(total_ms, 7.8, 1e-9);                  // 0.1 ms x (1 + ... + 12): nothing lost
  EXPECT_EQ(chart->spec["vconcat"].size(), 2u);      // latency and energy
  // No energy anywhere: the latency bar alone.
  auto h = fixtures::hand_run();
  for (auto& r : h.results) r.energy_j.reset();
  auto no_energy = pipeline_layers_chart(summarize(h.run), 0);
  ASSERT_TRUE(no_energy);
  EXPECT_EQ(no_energy->spec["vconcat"].size(), 1u);
  // Nothing measured: no chart.
  h.run.layer_results = {nullptr, nullptr, nullptr};
  EXPECT_FALSE(pipeline_layers_chart(summarize(h.run), 0));
}

// A pipeline of 0.6 ms per pass is drawn in µs (on a ms axis it read 0.0000-0.0006), its energy
// of 6 mJ and more in mJ: each bar its own unit, named in its title.
TEST(PipelineCharts, SubMillisecondPipelinesAreDrawnInMicroseconds) {
  auto tiny = fixtures::many_layer_summary(3);  // layers of 0.1, 0.2 and 0.3 ms
  auto chart = pipeline_layers_chart(tiny, 0, 8);
  ASSERT_TRUE(chart);
  std::map<std::string, double> latency;
  for (auto& v : chart->spec["data"]["values"])
    if (v["bar"] == "latency") latency[v["segment"].get<std::string>()] = v["value"].get<double>();
  EXPECT_NEAR(latency["layer0"], 100, 1e-9);
  EXPECT_NEAR(latency["<b>head</b> & \"x\""], 300, 1e-9);
  EXPECT_EQ(chart->spec["vconcat"][0]["encoding"]["x"]["title"], "µs per pass (latency x count)");
  EXPECT_EQ(chart->spec["vconcat"][1]["encoding"]["x"]["title"], "mJ per pass (energy x count, idle included)");
  auto compared = pipeline_comparison_chart({tiny});
  ASSERT_TRUE(compared);
  auto& first = compared->spec["data"]["values"][0];
  EXPECT_EQ(first["metric"], "latency per pass (µs)");
  EXPECT_NEAR(first["value"].get<double>(), 600, 1e-9);
}

TEST(PipelineCharts, ComparisonHasCompletePipelinesOnly) {
  auto chart = pipeline_comparison_chart(summaries());
  ASSERT_TRUE(chart);
  std::set<std::string> pipelines;
  for (auto& v : chart->spec["data"]["values"]) pipelines.insert(v["pipeline"].get<std::string>());
  EXPECT_EQ(pipelines, (std::set<std::string>{"toy fp32 cpu batch=8 image=32", "deep fp32 cpu batch=1"}));
  auto& first = chart->spec["data"]["values"][0];
  EXPECT_EQ(first["metric"], "latency per pass (ms)");
  EXPECT_NEAR(first["value"].get<double>(), 7, 1e-9);
  EXPECT_FALSE(pipeline_comparison_chart({summaries()[1]}));
}

TEST(PipelineCharts, EndToEndBesideSumOfLayers) {
  auto chart = pipeline_end_to_end_chart(summaries());
  ASSERT_TRUE(chart);
  auto& values = chart->spec["data"]["values"];
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0]["figure"], "sum of layers");
  EXPECT_NEAR(values[0]["time"].get<double>(), 7, 1e-9);
  EXPECT_EQ(chart->spec["encoding"]["x"]["title"], "ms per forward pass");
  EXPECT_EQ(values[1]["figure"], "PyTorch end to end");
  EXPECT_NEAR(values[1]["time"].get<double>(), 5, 1e-9);
  EXPECT_NEAR(values[1]["ratio"].get<double>(), 1.4, 1e-9);
  EXPECT_FALSE(pipeline_end_to_end_chart({summaries()[2]}));
}

TEST(PipelineReport, HtmlHasThePipelinesSectionChartsAndTables) {
  auto set = fixtures::report_set();
  auto pipelines = summaries();
  auto html = html_report({set}, pipelines);
  EXPECT_NE(html.find("<h2>Pipelines</h2>"), std::string::npos);
  EXPECT_LT(html.find("<h2>Pipelines</h2>"), html.find("<h2>Cases</h2>"));
  for (const char* id : {"pipeline-comparison", "pipeline-end-to-end", "pipeline-0-toy", "pipeline-1-broken", "pipeline-2-deep"})
    EXPECT_NE(html.find(fmt::format("<div class=\"chart\" id=\"{}\">", id)), std::string::npos) << id;
  // The specs are data for the renderer.
  auto at = html.find("id=\"chart-specs\">") + 17;
  auto specs = nlohmann::json::parse(html.substr(at, html.find("</script>", at) - at));
  std::set<std::string> ids;
  for (auto& s : specs) ids.insert(s["id"].get<std::string>());
  EXPECT_TRUE(ids.count("pipeline-comparison"));
  EXPECT_TRUE(ids.count("pipeline-2-deep"));
  // Summary table rows link to each pipeline; the incomplete one says so and lists what is missing.
  EXPECT_NE(html.find("<a href=\"#pipeline-1\">broken</a>"), std::string::npos);
  EXPECT_NE(html.find("<h3 id=\"pipeline-1\">broken fp32 cpu batch=8 image=32</h3>"), std::string::npos);
  EXPECT_NE(html.find("incomplete (1 missing)"), std::string::npos);
  EXPECT_NE(html.find("<b>Incomplete:</b> 1 layer(s) not measured"), std::string::npos);
  // Escaped: the skip reason and the label with markup; the raw text appears only inside the specs' JSON.
  EXPECT_NE(html.find("needs &lt;64 GiB&gt; of memory"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;head&lt;/b&gt; &amp; &quot;x&quot;"), std::string::npos);
  EXPECT_EQ(html.find("<b>head</b>"), std::string::npos);
  EXPECT_NE(html.find("\\u003cb>head\\u003c/b> & \\\"x\\\""), std::string::npos);  // in the specs' JSON, no '<'
  // Layer tables: one row per layer, in a details element each; the formula is stated.
  EXPECT_EQ(count(html, "<table class=\"layers\">"), 3u);
  EXPECT_EQ(count(html, "<details><summary>Layers ("), 3u);
  EXPECT_NE(html.find("<details><summary>Layers (12)</summary>"), std::string::npos);
  EXPECT_NE(html.find("max t<sub>i</sub>"), std::string::npos);
  EXPECT_NE(html.find("7.000 ms"), std::string::npos);
  EXPECT_NE(html.find("530.000 mJ"), std::string::npos);  // pipeline-parallel energy
  // Without pipelines, no section.
  EXPECT_EQ(html_report({set}).find("<h2>Pipelines</h2>"), std::string::npos);
}

// A config's own pipeline has no built-with parameters: its heading's line starts with its
// params, not with "; ".
TEST(PipelineReport, HeaderWithoutBuiltWithHasNoLeadingSeparator) {
  auto s = fixtures::many_layer_summary(3, "own");
  s.params.clear();
  ResultSet empty{"x", ResultsFormat::results_jsonl, nlohmann::json::object(), {}};
  auto html = html_report({empty}, {s});
  const auto at = html.find("<h3 id=\"pipeline-0\">");
  ASSERT_NE(at, std::string::npos);
  const auto line = html.substr(html.find("<p class=\"sub\">", at), 80);
  EXPECT_EQ(line.find("<p class=\"sub\">; "), std::string::npos) << line;
  EXPECT_EQ(line.rfind("<p class=\"sub\">30 params, ", 0), 0u) << line;
  auto with = fixtures::many_layer_summary(3, "own");
  auto html2 = html_report({empty}, {with});
  EXPECT_NE(html2.find("<p class=\"sub\">batch=1; 30 params, "), std::string::npos);
}

TEST(PipelineReport, MarkdownHasSummaryAndTopLayers) {
  auto md = markdown_report({fixtures::report_set()}, summaries());
  EXPECT_NE(md.find("## Pipelines"), std::string::npos);
  EXPECT_NE(md.find("| toy | cpu | fp32 | batch=8, image=32 | 207 | 2.00 k | complete | 7.000 ms | 1143 img/s | "
                    "60.000 mJ | 51.250 mJ | 4.000 ms | 530.000 mJ | 5.000 ms | 1.40 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| broken | cpu | fp32 | batch=8, image=32 | 207 | 2.00 k | incomplete (1 missing) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("### toy fp32 cpu batch=8"), std::string::npos);
  EXPECT_NE(md.find("1. `block.fc` (linear x 2): 4.000 ms, 57.1%"), std::string::npos) << md;
  EXPECT_NE(md.find("- block.fc (linear): skipped: needs &lt;64 GiB&gt; of memory"), std::string::npos) << md;
  EXPECT_LT(md.find("## Pipelines"), md.find("## Cases"));
  EXPECT_EQ(markdown_report({fixtures::report_set()}).find("## Pipelines"), std::string::npos);
}

TEST(PipelineReport, ReportCommandReadsPipelinesOfTheDirectory) {
  auto dir = fs::temp_directory_path() / "opmeter_pipeline_report_cmd";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "results.json") << gbench_json(fixtures::report_context(), fixtures::report_results()).dump();
  write_pipeline_outputs(dir.string(), summaries());
  auto out = (dir / "out.html").string();
  auto r = cli(fmt::format("report '{}' -o '{}'", dir.string(), out));
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("3 pipelines"), std::string::npos) << r.text;
  std::ifstream in(out);
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("<h2>Pipelines</h2>"), std::string::npos);
  // Given as its results.json, the same directory's pipelines.
  r = cli(fmt::format("report '{}' -o '{}' --no-md", (dir / "results.json").string(), out));
  EXPECT_NE(r.text.find("3 pipelines"), std::string::npos) << r.text;
  // A bad pipelines.json costs its section, with a warning, not the report.
  std::ofstream(dir / "pipelines.json") << "{oops";
  r = cli(fmt::format("report '{}' -o '{}'", dir.string(), out));
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("pipelines.json: not JSON"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("no Pipelines section"), std::string::npos) << r.text;
}

TEST(PipelineReport, TheRunsReportIsWrittenOnceWithItsPipelines) {
  auto dir = fs::temp_directory_path() / "opmeter_pipeline_rewrite";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const ResultSet run = {dir.string(), ResultsFormat::results_json, fixtures::report_context(), fixtures::report_results()};
  EXPECT_EQ(write_report_files(run, summaries()), (std::vector<std::string>{"report.html", "report.md"}));
  std::ifstream html(dir / "report.html"), md(dir / "report.md");
  std::stringstream h, m;
  h << html.rdbuf();
  m << md.rdbuf();
  EXPECT_NE(h.str().find("<h2>Pipelines</h2>"), std::string::npos);
  EXPECT_NE(m.str().find("## Pipelines"), std::string::npos);
  // Writing the pipeline files leaves the report alone: nothing rewrites it.
  fs::remove(dir / "report.html");
  write_pipeline_outputs(dir.string(), summaries());
  EXPECT_FALSE(fs::exists(dir / "report.html"));
}

namespace {

// The toy pipeline measured twice: run A as the fixture (7 ms per pass), run B with every median
// `scale` times A's, on `threads` threads, each summary from its folder as read_pipelines gives it.
// Results kept alive with their summaries.
struct TwoRuns {
  fixtures::HandRun a, b;
  std::vector<PipelineSummary> summaries;
  std::vector<ResultSet> sets;
};

TwoRuns two_runs(double scale, int threads_b = 2) {
  TwoRuns t{fixtures::hand_run(), fixtures::hand_run(), {}, {}};
  for (auto& r : t.b.results) {
    r.summary.median *= scale;
    for (auto& s : r.samples) s *= scale;
    r.case_string.replace(r.case_string.find("threads=2"), 9, fmt::format("threads={}", threads_b));
  }
  t.summaries = {summarize(t.a.run), summarize(t.b.run)};
  t.summaries[0].source = "/runs/tinyA";
  t.summaries[1].source = "/runs/tinyB";
  t.sets.push_back(
      {"/runs/tinyA", ResultsFormat::results_json, nlohmann::json::object(), {t.a.results.begin(), t.a.results.end()}});
  t.sets.push_back({"/runs/tinyB/results.json",
                    ResultsFormat::results_json,
                    nlohmann::json::object(),
                    {t.b.results.begin(), t.b.results.end()}});
  return t;
}

// The chart's `value_field` per pipeline label, of the values whose `key` is `wanted`; a label
// seen twice fails.
std::map<std::string, double> values_by_label(const Chart& c, const std::string& key, const std::string& wanted,
                                              const std::string& value_field) {
  std::map<std::string, double> out;
  for (auto& v : c.spec["data"]["values"]) {
    if (v[key] != wanted) continue;
    EXPECT_TRUE(out.emplace(v["pipeline"].get<std::string>(), v[value_field].get<double>()).second) << v.dump();
  }
  return out;
}

}  // namespace

// The probe: `report tinyA tinyB` drew one bar of the two runs summed (Vega-Lite stacks bars of one
// label) under two identical headings. Each run is its own bar, named by its run.
TEST(PipelineCharts, TwoRunsOfOnePipelineAreTwoBarsNeverTheirSum) {
  auto t = two_runs(2);
  auto labels = pipeline_labels(t.summaries);
  EXPECT_EQ(labels, (std::vector<std::string>{"toy fp32 cpu batch=8 image=32 (tinyA)",
                                              "toy fp32 cpu batch=8 image=32 (tinyB)"}));
  auto chart = pipeline_comparison_chart(t.summaries, labels);
  ASSERT_TRUE(chart);
  // A: 1 ms x 1 + 2 ms x 2 + 0.5 ms x 4 = 7 ms; B twice each median: 14 ms. Never 21.
  auto latency = values_by_label(*chart, "metric", "latency per pass (ms)", "value");
  EXPECT_EQ(latency.size(), 2u);
  EXPECT_NEAR(latency[labels[0]], 7, 1e-9);
  EXPECT_NEAR(latency[labels[1]], 14, 1e-9);
  EXPECT_TRUE(chart->spec["spec"]["encoding"]["x"]["stack"].is_null());
  EXPECT_TRUE(chart->spec["spec"]["encoding"]["x"].contains("stack"));
  // Without their folders (summed up in this process): numbered, still two.
  auto unread = t.summaries;
  for (auto& s : unread) s.source.clear();
  auto numbered = pipeline_labels(unread);
  EXPECT_EQ(numbered[0], "toy fp32 cpu batch=8 image=32 #1");
  EXPECT_EQ(numbered[1], "toy fp32 cpu batch=8 image=32 #2");
  // A pipeline of its own keeps its plain name.
  EXPECT_EQ(pipeline_labels({t.summaries[0]}), (std::vector<std::string>{"toy fp32 cpu batch=8 image=32"}));
}

TEST(PipelineCharts, TheSamePipelineAtOtherThreadsIsNamedByItsThreads) {
  auto t = two_runs(0.6, 1);
  EXPECT_EQ(pipeline_threads(t.summaries[0]), std::set<int>{2});
  EXPECT_EQ(pipeline_threads(t.summaries[1]), std::set<int>{1});
  auto labels = pipeline_labels(t.summaries);
  EXPECT_EQ(labels, (std::vector<std::string>{"toy fp32 cpu batch=8 image=32 threads=2",
                                              "toy fp32 cpu batch=8 image=32 threads=1"}));
  Result model = fixtures::hand_result("model", 5e-3, 0.4);
  t.a.run.end_to_end = t.b.run.end_to_end = &model;
  t.summaries = {summarize(t.a.run), summarize(t.b.run)};
  auto chart = pipeline_end_to_end_chart(t.summaries);  // labels of its own when none are given
  ASSERT_TRUE(chart);
  auto sums = values_by_label(*chart, "figure", "sum of layers", "time");
  EXPECT_NEAR(sums[labels[0]], 7, 1e-9);
  EXPECT_NEAR(sums[labels[1]], 7 * 0.6, 1e-9);
  EXPECT_TRUE(chart->spec["encoding"]["x"]["stack"].is_null());
}

// The probe: a run with layers excluded was labelled "threads=1+2" beside the complete one at
// threads=2, from the bare case (no impl, threads=1) its pipelines.json gave a missing layer.
TEST(PipelineLabels, ThreadsComeFromLayersWithResultsOnly) {
  auto t = two_runs(1);
  t.b.run.layer_results[2] = nullptr;  // as pipelines.json from before: the layer's bare case
  t.summaries[1] = summarize(t.b.run);
  t.summaries[1].source = "/runs/tinyB";
  ASSERT_TRUE(t.summaries[1].layers[2].case_string.ends_with("/threads=1")) << t.summaries[1].layers[2].case_string;
  EXPECT_EQ(pipeline_threads(t.summaries[1]), std::set<int>{2});
  EXPECT_EQ(pipeline_labels(t.summaries), (std::vector<std::string>{"toy fp32 cpu batch=8 image=32 (tinyA)",
                                                                    "toy fp32 cpu batch=8 image=32 (tinyB)"}));
  // Planned now: the layer names its planned case, threads=2.
  t.b.run.layer_cases = {"", "", "relu/opmeter/fp32/n=8/threads=2"};
  EXPECT_EQ(summarize(t.b.run).layers[2].case_string, "relu/opmeter/fp32/n=8/threads=2");
}

TEST(PipelineReport, TwoRunsOfOnePipelineHaveTheirOwnRowsAndHeadings) {
  auto t = two_runs(2);
  auto md = markdown_report(t.sets, t.summaries);
  EXPECT_EQ(count(md, "### toy fp32 cpu batch=8 image=32 (tinyA)\n"), 1u) << md;
  EXPECT_EQ(count(md, "### toy fp32 cpu batch=8 image=32 (tinyB)\n"), 1u) << md;
  EXPECT_NE(md.find("| toy (tinyA) | cpu | fp32 | batch=8, image=32 | 207 | 2.00 k | complete | 7.000 ms |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| toy (tinyB) | cpu | fp32 | batch=8, image=32 | 207 | 2.00 k | complete | 14.000 ms |"),
            std::string::npos)
      << md;
  auto html = html_report(t.sets, t.summaries);
  EXPECT_NE(html.find("<h3 id=\"pipeline-0\">toy fp32 cpu batch=8 image=32 (tinyA)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<h3 id=\"pipeline-1\">toy fp32 cpu batch=8 image=32 (tinyB)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"#pipeline-1\">toy (tinyB)</a>"), std::string::npos);
}

// A copy of a run folder: the same case strings and medians, told apart only by the folder each
// pipelines.json was read from (matching medians against the loaded results named A for both).
TEST(PipelineLabels, ACopiedRunIsNamedByItsOwnFolder) {
  auto t = two_runs(1);  // B is A again, at A's threads
  // "dir/" and "." name their folders too.
  t.summaries[0].source = "/runs/tinyA/";
  t.summaries[1].source = ".";
  const auto here = fs::current_path().filename().string();
  EXPECT_EQ(pipeline_labels(t.summaries), (std::vector<std::string>{"toy fp32 cpu batch=8 image=32 (tinyA)",
                                                                    "toy fp32 cpu batch=8 image=32 (" + here + ")"}));
}

TEST(PipelineReport, ReportOfACopiedRunNamesEachPipelineByItsFolder) {
  auto root = fs::temp_directory_path() / "opmeter_pipeline_copied_run";
  fs::remove_all(root);
  fs::create_directories(root / "tinyA");
  auto h = fixtures::hand_run();
  std::vector<Result> layers(h.results.begin(), h.results.end());
  std::ofstream(root / "tinyA" / "results.json") << gbench_json(fixtures::report_context(), layers).dump();
  write_pipeline_outputs((root / "tinyA").string(), {summarize(h.run)});
  fs::copy(root / "tinyA", root / "tinyB", fs::copy_options::recursive);
  auto out = (root / "report.html").string();
  // B given first, and as its results file: each pipeline still named by the folder it came from.
  auto r = cli(fmt::format("report '{}' '{}' -o '{}'", (root / "tinyB" / "results.json").string(),
                           (root / "tinyA").string(), out));
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("2 pipelines"), std::string::npos) << r.text;
  auto md = slurp(root / "report.md");
  EXPECT_EQ(count(md, "### toy fp32 cpu batch=8 image=32 (tinyB)\n"), 1u) << md;
  EXPECT_EQ(count(md, "### toy fp32 cpu batch=8 image=32 (tinyA)\n"), 1u) << md;
  EXPECT_LT(md.find("(tinyB)"), md.find("(tinyA)")) << md;  // in the order given
  auto html = slurp(out);
  EXPECT_NE(html.find("<h3 id=\"pipeline-0\">toy fp32 cpu batch=8 image=32 (tinyB)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<h3 id=\"pipeline-1\">toy fp32 cpu batch=8 image=32 (tinyA)</h3>"), std::string::npos);
}
