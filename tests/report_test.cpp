// Reading results back (every input kind and every bad one), the HTML page and report.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "report/charts.hpp"
#include "opmeter/errors.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "engine/runner.hpp"
#include "report/chart_assets.hpp"
#include "tests/report_fixture.hpp"

using namespace opmeter;
using namespace opmeter::fixtures;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("opmeter_report_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

std::string load_error(const std::string& path) {
  try {
    load_results(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(LoadResults, ResultsJsonRoundTripsWhatReportsNeed) {
  auto dir = temp_dir("roundtrip");
  auto results = report_results();
  results[5].pct_peak = 61.5;
  results[5].energy_j = 0.25;
  results[5].max_error = 1e-7;
  results[5].bandwidth_gbps = 74;
  write(dir / "results.json", gbench_json(report_context(), results).dump(2));
  auto set = load_results(dir.string());
  EXPECT_EQ(set.source, dir.string());
  EXPECT_EQ(set.format, ResultsFormat::results_json);
  EXPECT_EQ(set.context["cpu"]["model"], "Test CPU <model>");
  ASSERT_EQ(set.results.size(), results.size());  // aggregates are not results
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto &a = results[i], &b = set.results[i];
    EXPECT_EQ(a.case_string, b.case_string);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.reason, b.reason);
    EXPECT_EQ(a.flags, b.flags);
    EXPECT_EQ(a.samples, b.samples);
    EXPECT_DOUBLE_EQ(a.summary.median, b.summary.median);
    EXPECT_DOUBLE_EQ(a.work.bytes_read, b.work.bytes_read);
    EXPECT_DOUBLE_EQ(a.work.bytes_written, b.work.bytes_written);
    EXPECT_DOUBLE_EQ(a.gflops, b.gflops);
    EXPECT_EQ(a.avg_power_w, b.avg_power_w);
  }
  EXPECT_EQ(set.results[5].pct_peak, 61.5);
  EXPECT_EQ(set.results[5].energy_j, 0.25);
  EXPECT_EQ(set.results[5].max_error, 1e-7);
  EXPECT_EQ(set.results[5].bandwidth_gbps, 74);
}

TEST(LoadResults, JournalAndDirectoryWithOnlyAJournal) {
  auto dir = temp_dir("journal");
  std::string lines;
  for (auto& r : report_results()) lines += to_json(r).dump() + "\n";
  write(dir / "results.jsonl", lines);
  auto set = load_results(dir.string());
  EXPECT_EQ(set.format, ResultsFormat::results_jsonl);
  EXPECT_TRUE(set.context.empty());
  EXPECT_EQ(set.results.size(), report_results().size());
  EXPECT_EQ(load_results((dir / "results.jsonl").string()).results.size(), set.results.size());
  {  // with the run.json a run writes at its start, the journal named on its own has its machine too
    auto with_run = temp_dir("journal_with_run");
    write(with_run / "results.jsonl", lines);
    write(with_run / "run.json",
          nlohmann::json({{"run", {{"source", "x.yaml"}}}, {"context", report_context()}}).dump());
    EXPECT_EQ(load_results((with_run / "results.jsonl").string()).context["cpu"]["model"], "Test CPU <model>");
    EXPECT_EQ(load_results(with_run.string()).context["cpu"]["model"], "Test CPU <model>");  // as its folder
  }
  // The directory has no results.json, which a run writes at its end: a note says the journal is read.
  ASSERT_EQ(set.notes.size(), 1u);
  EXPECT_NE(set.notes[0].find("no results.json (a run stopped before its end?); reading the journal"), std::string::npos)
      << set.notes[0];
  EXPECT_EQ(set.notes[0].find("cut short"), std::string::npos) << set.notes[0];
  // A last line cut short by the stop is left out, and said.
  write(dir / "results.jsonl", lines + to_json(report_results()[0]).dump().substr(0, 40));
  set = load_results(dir.string());
  EXPECT_EQ(set.results.size(), report_results().size());
  ASSERT_EQ(set.notes.size(), 1u);
  EXPECT_NE(set.notes[0].find("its last line, cut short by the stop, left out"), std::string::npos) << set.notes[0];
}

TEST(LoadResults, BadInputsSayWhatTheFileIs) {
  auto dir = temp_dir("bad");
  EXPECT_EQ(load_error((dir / "missing.json").string()), (dir / "missing.json").string() + ": no such file or directory");
  fs::create_directories(dir / "empty");
  EXPECT_NE(load_error((dir / "empty").string()).find("a directory without results.json or results.jsonl"), std::string::npos);
  auto csv = write(dir / "results.csv", csv_table(report_context(), report_results()));
  EXPECT_NE(load_error(csv).find("is opmeter's CSV summary, which holds medians only"), std::string::npos);
  auto profile = write(dir / "profile.json", nlohmann::json{{"schema", kCalibrationSchema}}.dump());
  EXPECT_NE(load_error(profile).find("is a calibration profile"), std::string::npos);
  auto foreign = write(dir / "gbench.json", R"({"context": {}, "benchmarks": [{"name": "BM_x", "run_type": "iteration"}]})");
  EXPECT_NE(load_error(foreign).find("Google Benchmark JSON from another program"), std::string::npos);
  auto fleet = write(dir / "fleet.json", R"({"schema": "opmeter-fleet/1", "machines": []})");
  EXPECT_NE(load_error(fleet).find("is an opmeter file of another kind (opmeter-fleet/1), not results"), std::string::npos)
      << load_error(fleet);
  auto other = write(dir / "other.json", R"({"hello": 1})");
  EXPECT_NE(load_error(other).find("is JSON but not opmeter results"), std::string::npos);
  auto junk = write(dir / "junk.json", R"({"benchmarks": [{"name": "x", "run_type": "aggregate"}, 5, null]})");
  EXPECT_NE(load_error(junk).find("junk.json: benchmark 2 is number, not an object"), std::string::npos) << load_error(junk);
  auto text = write(dir / "notes.txt", "just some text\n");
  EXPECT_NE(load_error(text).find("is not an opmeter results file"), std::string::npos);
  auto broken = write(dir / "broken.jsonl", to_json(report_results()[0]).dump() + "\n{oops\n" +
                                                to_json(report_results()[1]).dump() + "\n");
  EXPECT_NE(load_error(broken).find("broken.jsonl:2: not a JSON line"), std::string::npos);
  EXPECT_EQ(detect_results_format(csv), ResultsFormat::results_csv);
  // Cut short, damaged on its first line, compressed, or a record without its case: each named.
  const std::string json = gbench_json(report_context(), report_results()).dump(2);
  auto cut = write(dir / "cut.json", json.substr(0, json.size() / 2));
  EXPECT_NE(load_error(cut).find("cut.json: invalid JSON at byte"), std::string::npos) << load_error(cut);
  auto nan = write(dir / "nan.jsonl", "{\"case\": \"x\", \"samples_s\": [NaN]}\n");
  EXPECT_NE(load_error(nan).find("nan.jsonl: invalid JSON at byte"), std::string::npos) << load_error(nan);
  auto xz = write(dir / "r.jsonl.xz", std::string("\xFD"
                                                  "7zXZ\0\0",
                                                  8) +
                                          "rest");
  EXPECT_NE(load_error(xz).find("is xz-compressed: decompress it first (xz -dk"), std::string::npos) << load_error(xz);
  auto nocase = write(dir / "nocase.jsonl", "{\"status\": \"ok\", \"samples_s\": [1e-6]}\n");
  EXPECT_NE(load_error(nocase).find("is a journal record without 'case'"), std::string::npos) << load_error(nocase);
}

TEST(HtmlReport, SelfContainedWithEveryChartAndCase) {
  auto set = report_set();
  set.results.push_back(with_status("gemm/onednn/fp32/M=8,N=8,K=8/threads=2", Status::crashed, "signal <11>"));
  auto html = html_report({set});
  // Nothing from the network: a policy forbids it and no element points outside.
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)")));
  // The chart libraries are inline, in load order.
  if (chart_libraries().empty()) {  // a -DOPMETER_CHARTS=OFF build: the report must say so
    EXPECT_NE(html.find("Charts are missing"), std::string::npos);
    EXPECT_EQ(html.find("/* vega"), std::string::npos);
  } else {
    ASSERT_EQ(chart_libraries().size(), 3u);
    EXPECT_EQ(html.find("Charts are missing"), std::string::npos);
    auto vega = html.find("/* vega "), lite = html.find("/* vega-lite "), embed = html.find("/* vega-embed ");
    ASSERT_NE(vega, std::string::npos);
    EXPECT_LT(vega, lite);
    EXPECT_LT(lite, embed);
  }
  // One container per chart, and the specs as data.
  for (auto& c : report_charts(set.results)) EXPECT_NE(html.find("id=\"" + c.id + "\""), std::string::npos) << c.id;
  EXPECT_NE(html.find("<script type=\"application/json\" id=\"chart-specs\">"), std::string::npos);
  // Every case is a row, its status visible; text is escaped.
  std::size_t rows = 0;
  for (auto at = html.find("<tr class="); at != std::string::npos; at = html.find("<tr class=", at + 1)) ++rows;
  EXPECT_EQ(rows, set.results.size());
  EXPECT_NE(html.find("<tr class=\"failed\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"skipped\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"ok unconverged\">"), std::string::npos);
  EXPECT_NE(html.find("signal &lt;11&gt;"), std::string::npos);
  EXPECT_NE(html.find("Test CPU &lt;model&gt;"), std::string::npos);
  EXPECT_EQ(html.find("Test CPU <model>"), std::string::npos);
  EXPECT_NE(html.find("<h3>Run settings</h3>"), std::string::npos);
  EXPECT_NE(html.find("suite quick"), std::string::npos);
  EXPECT_LT(html.size(), 3u << 20);
}

// vega-embed's "View Source" writes the spec, unescaped, into a popup of the page's own origin,
// and every spec carries text from results files (impl names, labels, case strings): the page
// keeps that action off, and with it the compiled view and the editor; export stays on.
TEST(HtmlReport, ChartMenuHasNoSourceAction) {
  auto html = html_report({report_set()});
  std::smatch embed;
  ASSERT_TRUE(std::regex_search(html, embed, std::regex(R"(vegaEmbed\(el, chart\.spec, \{\s*actions: \{([^}]*)\})")));
  std::map<std::string, std::string> actions;
  const std::string list = embed[1];
  std::regex entry(R"((\w+)\s*:\s*(\w+))");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), entry); it != std::sregex_iterator(); ++it)
    actions[(*it)[1]] = (*it)[2];
  EXPECT_EQ(actions, (std::map<std::string, std::string>{
                         {"export", "true"}, {"source", "false"}, {"compiled", "false"}, {"editor", "false"}}))
      << list;
  // One call of vegaEmbed: no other chart is drawn with other options.
  EXPECT_EQ(html.find("vegaEmbed(", html.find("vegaEmbed(el,") + 1), std::string::npos);
}

// Two runs given together: one case measured in each is two rows, told apart by a run column
// (HTML and markdown), and the best per op names the run it came from.
TEST(HtmlReport, SeveralRunsHaveARunColumn) {
  const std::string kase = "silu/opmeter/fp32/batch=4,seq=256,hidden=1024/threads=2";
  const double bytes = 4 * 256 * 1024 * 8.0;
  auto run = [&](const std::string& source, double gbps) {
    return ResultSet{source,
                     ResultsFormat::results_jsonl,
                     nlohmann::json::object(),
                     {measured(kase, bytes / (gbps * 1e9), {bytes * 0.6, bytes / 2, bytes / 2})}};
  };
  auto sets = std::vector<ResultSet>{run("m/a/run1", 10), run("m/b/run1", 20)};
  auto html = html_report(sets);
  EXPECT_NE(html.find("<thead><tr><th>run</th><th>case</th>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"ok\"><td class=\"run\">a/run1</td><td class=\"case\">" + kase), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"ok\"><td class=\"run\">b/run1</td><td class=\"case\">" + kase), std::string::npos);
  // One run: no run column.
  EXPECT_EQ(html_report({sets[0]}).find("<th>run</th>"), std::string::npos);
  auto md = markdown_report(sets);
  EXPECT_NE(md.find("| run | case | "), std::string::npos) << md;
  EXPECT_NE(md.find("| a/run1 | silu | "), std::string::npos) << md;
  EXPECT_NE(md.find("| b/run1 | silu | "), std::string::npos) << md;
  auto best = md.substr(md.find("## Best per op and dtype"));
  best = best.substr(0, best.find("\n\n", best.find("|---")));
  EXPECT_NE(best.find("| op | dtype | impl | shape | run | median |"), std::string::npos) << best;
  EXPECT_NE(best.find("| silu | fp32 | opmeter | batch=4,seq=256,hidden=1024 | b/run1 | "), std::string::npos) << best;
  EXPECT_EQ(markdown_report({sets[0]}).find("| run |"), std::string::npos);
}

// A result that did not finish has no numbers: its reason spans their columns instead of growing
// the narrow status cell hundreds of px tall; an empty run says it has no cases.
TEST(HtmlReport, AReasonSpansTheEmptyColumns) {
  ResultSet set{"x",
                ResultsFormat::results_jsonl,
                nlohmann::json::object(),
                {with_status("gemm/onednn/fp32/M=8,N=8,K=8/threads=2", Status::crashed, "signal <11>"),
                 measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-5, gemm_work(64, 64, 64))}};
  auto html = html_report({set});
  EXPECT_NE(html.find("<td><span class=\"status\">crashed</span></td><td class=\"reason\" colspan=\"12\">signal "
                      "&lt;11&gt;</td></tr>"),
            std::string::npos);
  // Every row as wide as the header: 14 columns.
  const auto body = html.substr(html.find("<table id=\"cases\""));
  std::regex row(R"(<tr class="[^"]*">(.*?)</tr>)");
  std::size_t rows = 0;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), row); it != std::sregex_iterator(); ++it, ++rows) {
    const std::string cells = (*it)[1];
    std::size_t n = 0;
    std::smatch span;
    for (auto at = cells.find("<td"); at != std::string::npos; at = cells.find("<td", at + 1)) ++n;
    if (std::regex_search(cells, span, std::regex(R"re(colspan="(\d+)")re"))) n += std::stoul(span[1]) - 1;
    EXPECT_EQ(n, 14u) << cells;
  }
  EXPECT_EQ(rows, 2u);
  ResultSet none{"y", ResultsFormat::results_jsonl, nlohmann::json::object(), {}};
  EXPECT_NE(html_report({none}).find("These results hold no cases."), std::string::npos);
}

TEST(HtmlReport, NoChartsSaysWhy) {
  ResultSet set{"x", ResultsFormat::results_jsonl, nlohmann::json::object(),
                {with_status("gemm/onednn/fp32/M=8,N=8,K=8/threads=2", Status::skipped, "no")}};
  auto html = html_report({set});
  EXPECT_NE(html.find("hold nothing to chart"), std::string::npos);
  EXPECT_NE(html.find("No machine context"), std::string::npos);
}

// The case table sorts by number: each measured cell carries its value in data-v (seconds for the
// median, the rate for GFLOP/s and GB/s, percent for % of BW), and % of BW is a column as in results.md.
TEST(HtmlReport, CaseTableSortsByValue) {
  const std::string kase = "silu/opmeter/fp32/batch=4,seq=256,hidden=1024/threads=2";
  const double bytes = 4 * 256 * 1024 * 8.0;
  auto r = measured(kase, std::vector<double>{2e-3, 2e-3, 2e-3}, {bytes * 0.6, bytes / 2, bytes / 2});
  r.pct_bandwidth = 61.25;
  ResultSet set{"x", ResultsFormat::results_jsonl, nlohmann::json::object(), {r}};
  auto html = html_report({set});
  EXPECT_NE(html.find("<table id=\"cases\" class=\"sortable\">"), std::string::npos);
  EXPECT_NE(html.find("<th class=\"num\">% of BW</th><th class=\"num\">% of roofline</th>"), std::string::npos);
  const auto row = html.substr(html.find("<tr class=\"ok\">"));
  std::vector<std::pair<double, std::string>> cells;  // median, GFLOP/s, GB/s, % of BW, samples: those it has
  const std::regex num(R"re(<td class="num" data-v="([^"]+)">([^<]+)</td>)re");
  for (auto it = std::sregex_iterator(row.begin(), row.end(), num); it != std::sregex_iterator(); ++it)
    cells.emplace_back(std::stod((*it)[1]), (*it)[2]);
  ASSERT_GE(cells.size(), 4u) << row;
  EXPECT_DOUBLE_EQ(cells[0].first, 2e-3);
  EXPECT_EQ(cells[0].second, "2.000 ms");
  EXPECT_NEAR(cells[1].first, bytes * 0.6 / 2e-3 / 1e9, 1e-9);  // GFLOP/s
  EXPECT_NEAR(cells[2].first, bytes / 2e-3 / 1e9, 1e-9);        // GB/s
  EXPECT_EQ(cells[3], std::make_pair(61.25, std::string("61.2%")));
  // Not measured: no data-v, so the sort puts it last.
  EXPECT_NE(row.find("<td class=\"num\"></td>"), std::string::npos);
}

// Successful cases without sample times (another tool's file, or an edited one) are said to be
// that, not "no successful measurements" above their rows.
TEST(HtmlReport, OkCasesWithoutSamplesAreNamed) {
  auto r = measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-5, gemm_work(64, 64, 64));
  r.samples.clear();
  r.summary = Summary{};
  ResultSet set{"x", ResultsFormat::results_jsonl, nlohmann::json::object(), {r}};
  auto html = html_report({set});
  EXPECT_NE(html.find("1 of the 1 successful cases carry no sample times (samples_s)"), std::string::npos);
}

TEST(MarkdownReport, ContextBestPerOpAndCases) {
  auto md = markdown_report({report_set()});
  EXPECT_NE(md.find("# opmeter report"), std::string::npos);
  EXPECT_NE(md.find("| cpu.model | Test CPU &lt;model&gt; |"), std::string::npos);
  EXPECT_NE(md.find("| source | suite quick |"), std::string::npos);
  EXPECT_NE(md.find("## Best per op and dtype"), std::string::npos);
  EXPECT_NE(md.find("| gemm | bf16 | cublaslt | M=8192,"), std::string::npos) << md;  // the GPU fixture's
  EXPECT_NE(md.find("| gemm | fp32 | onednn | "), std::string::npos) << md;
  EXPECT_NE(md.find("1 failed"), std::string::npos);
  EXPECT_NE(md.find("(1 unconverged)"), std::string::npos);
  EXPECT_NE(md.find("## Cases"), std::string::npos);
  EXPECT_NE(md.find("linear+bias+gelu"), std::string::npos);  // the fusion table
}

// Text from a results file stays text in report.md and results.md: a label or context value
// with a line break does not end its table row (and start a heading), and `<img onerror>` or
// `<details>` reach no markdown renderer that passes HTML through.
TEST(MarkdownReport, CellsEscapeHtmlAndLineBreaks) {
  const std::string evil = "a|b\n## injected heading\n<img src=x onerror=alert(1)> & <details open>";
  auto set = report_set();
  set.source = "runs/`x`\n# src";
  set.context["cpu"]["model"] = evil;
  set.context["run"]["label"] = evil;
  for (auto& r : set.results) r.kase.label = evil;
  set.results.front().kase.impl = "<b>impl</b>";
  for (const std::string& md : {markdown_report({set}), markdown_table(set.results)}) {
    EXPECT_EQ(md.find("<img"), std::string::npos) << md;
    EXPECT_EQ(md.find("<details"), std::string::npos);
    EXPECT_EQ(md.find("<b>"), std::string::npos);
    EXPECT_EQ(md.find("\n## injected"), std::string::npos);
    EXPECT_EQ(md.find("\n# src"), std::string::npos);
    EXPECT_NE(md.find("a/b ## injected heading &lt;img src=x onerror=alert(1)&gt; &amp; &lt;details open&gt;"),
              std::string::npos)
        << md;
    // Every table row still has its table's number of cells.
    std::size_t columns = 0;
    std::istringstream lines(md);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("|", 0) != 0) {
        columns = 0;
        continue;
      }
      const auto bars = std::count(line.begin(), line.end(), '|');
      if (columns == 0) columns = bars;
      EXPECT_EQ(bars, columns) << line;
    }
  }
  EXPECT_NE(markdown_report({set}).find("&lt;b&gt;impl&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(markdown_report({set}).find("- `runs/'x' # src`: "), std::string::npos) << markdown_report({set});
}

// An int4-weight recipe is not the best bf16 linear: recipes are ranked on their own, named in
// the dtype column.
TEST(MarkdownReport, BestPerOpRanksRecipesApart) {
  const std::string shape = "batch=1,seq=1,hidden=1024,out=8192,act=none";
  Work lin{2.0 * 1024 * 8192, 1024.0 * 8192 * 2, 8192 * 2};
  ResultSet set{"r",
                ResultsFormat::results_jsonl,
                nlohmann::json::object(),
                {measured("linear/onednn/bf16/" + shape + "/threads=2", lin.flops / 17e9, lin),
                 measured("linear/opmeter_quant/bf16/" + shape + ",quant=int4wo-64/threads=2", lin.flops / 94e9, lin),
                 measured("linear/opmeter_quant/bf16/" + shape + ",quant=int8wo/threads=2", lin.flops / 50e9, lin)}};
  auto md = markdown_report({set});
  auto best = md.substr(md.find("## Best per op and dtype"));
  best = best.substr(0, best.find("\n\n", best.find("|---")));
  EXPECT_NE(best.find("| linear | bf16 | onednn | " + shape + " | "), std::string::npos) << best;
  EXPECT_NE(best.find("| linear | bf16, quant=int4wo-64 | opmeter_quant | "), std::string::npos) << best;
  EXPECT_NE(best.find("| linear | bf16, quant=int8wo | opmeter_quant | "), std::string::npos) << best;
  EXPECT_EQ(best.find("| linear | bf16 | opmeter_quant"), std::string::npos) << best;
}

// Two runs of the same config: each run's steps and recipes are compared with that run's own
// baselines, never an impl with its copy in the other run (which would read 0.5x of itself).
TEST(MarkdownReport, SeveralRunsCompareWithinEachRun) {
  const std::string shape = "batch=1,seq=16,hidden=64,out=64,act=none";
  auto run = [&](const std::string& source, double step_s, double recipe_s) {
    return ResultSet{source,
                     ResultsFormat::results_jsonl,
                     nlohmann::json::object(),
                     {measured("linear/onednn_train/fp32/" + shape + ",mode=train/threads=2", step_s),
                      measured("linear/onednn/bf16/" + shape + "/threads=2", 2 * recipe_s),
                      measured("linear/opmeter_quant/bf16/" + shape + ",quant=int8wo/threads=2", recipe_s)}};
  };
  auto md = markdown_report({run("r1", 10e-6, 4e-6), run("r2", 20e-6, 8e-6)});
  const auto first = md.find("## Compared within `r1`"), second = md.find("## Compared within `r2`");
  ASSERT_NE(first, std::string::npos) << md;
  ASSERT_NE(second, std::string::npos) << md;
  // Each run's section on its own: its step its own baseline (1.00x; merged, r2's would read 0.50x
  // against r1's), its recipe 2x its own baseline (merged, r2's would be 1.00x against r1's faster one).
  for (const std::string& section : {md.substr(first, second - first), md.substr(second)}) {
    EXPECT_NE(section.find("| onednn_train | 1.00x |"), std::string::npos) << section;
    EXPECT_NE(section.find("| onednn | 2.00x |"), std::string::npos) << section;
    EXPECT_EQ(section.find("0.50x"), std::string::npos) << section;
    EXPECT_EQ(section.find("| onednn | 1.00x |"), std::string::npos) << section;
  }
  // One run: the tables follow its cases, as before.
  EXPECT_EQ(markdown_report({run("r1", 10e-6, 4e-6)}).find("Compared within"), std::string::npos);
  // The HTML report draws the quantization chart once a run, named after it.
  auto html = html_report({run("r1", 10e-6, 4e-6), run("r2", 20e-6, 8e-6)});
  EXPECT_NE(html.find("Quantization recipes: speedup vs M (r1)"), std::string::npos);
  EXPECT_NE(html.find("Quantization recipes: speedup vs M (r2)"), std::string::npos);
}

// A training step runs other work than the op's forward: the best per op and dtype is a forward's,
// however fast a step's rate (the training table has the steps).
TEST(MarkdownReport, BestPerOpLeavesTrainingStepsToTheirTable) {
  const std::string shape = "batch=1,seq=16,hidden=64,out=64,act=none";
  ResultSet set{"r",
                ResultsFormat::results_jsonl,
                nlohmann::json::object(),
                {measured("linear/onednn/fp32/" + shape + "/threads=2", 10e-6, Work{1e5, 1e4, 1e3}),
                 measured("linear/onednn_train/fp32/" + shape + ",mode=train/threads=2", 10e-6, Work{1e7, 1e4, 1e3})}};
  auto md = markdown_report({set});
  auto best = md.substr(md.find("## Best per op and dtype"));
  best = best.substr(0, best.find("\n\n", best.find("|---")));
  EXPECT_NE(best.find("| linear | fp32 | onednn | "), std::string::npos) << best;
  EXPECT_EQ(best.find("onednn_train"), std::string::npos) << best;
}
