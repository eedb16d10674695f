// The report's Fleet section and fleet.json: numbers checked against the ranking, hardware
// medians and outlier rule computed here independently, on a synthetic merged tree.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "report/fleet_chart.hpp"
#include "report/fleet_section.hpp"
#include "opmeter/sensor.hpp"
#include "report/report.hpp"
#include "report/reporters.hpp"
#include "scale/fleet.hpp"
#include "scale/merge.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/fleet_fixture.hpp"
#include "tests/report_fixture.hpp"
#include "tests/result_fixtures.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;
using namespace opmeter::fixtures;

namespace {

struct Expected {
  std::string machine;
  double vs;  // fraction
  bool outlier;
};

// The ranking and deviations the section should show, computed from the results alone: every
// machine is the same hardware, so the reference is the median of all five.
std::vector<Expected> expected_ranking(const ResultSet& set, const std::string& case_string) {
  std::vector<std::pair<double, std::string>> times;
  for (auto& r : set.results)
    if (r.case_string == case_string) times.push_back({r.summary.median, r.details.at(kMachineDetail)});
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2].first;  // five machines: the middle one
  std::vector<Expected> out;
  for (auto& [t, m] : times) out.push_back({m, t / median - 1, std::abs(t / median - 1) > 0.05});
  return out;
}

struct Row {
  std::string machine;
  bool outlier;
  int rank;
  double vs_pct;
  std::string vs_text, note;
};

// The rows of one case's ranking table in the HTML.
std::vector<Row> ranking_rows(const std::string& html, const std::string& case_string) {
  auto start = html.find("<details class=\"fleet-case\" data-case=\"" + html_escape(case_string) + "\">");
  if (start == std::string::npos) return {};
  auto block = html.substr(start, html.find("</details>", start) - start);
  static const std::regex row(
      R"re(<tr data-machine="([^"]+)"( class="outlier")?><td class="num" data-v="(\d+)">\d+</td><td>[^<]*</td><td>[^<]*</td>)re"
      R"re(<td class="num" data-v="[^"]+">[^<]*</td><td class="num" data-v="([^"]+)">([^<]*)</td><td>(.*?)</td></tr>)re");
  std::vector<Row> rows;
  for (std::sregex_iterator it(block.begin(), block.end(), row), end; it != end; ++it)
    rows.push_back({(*it)[1], (*it)[2].matched, std::stoi((*it)[3]), std::stod((*it)[4]), (*it)[5], (*it)[6]});
  return rows;
}

}  // namespace

TEST(FleetReport, RankingPercentagesAndOutliersMatchAnIndependentComputation) {
  auto set = fleet_set();
  auto html = html_report({set});
  ASSERT_NE(html.find("<h2 id=\"fleet\">Fleet</h2>"), std::string::npos);
  std::size_t outliers = 0;
  for (auto* case_string : {kGemm, kSilu}) {
    auto want = expected_ranking(set, case_string);
    auto rows = ranking_rows(html, case_string);
    ASSERT_EQ(rows.size(), want.size()) << case_string;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      SCOPED_TRACE(fmt::format("{} rank {}", case_string, i + 1));
      EXPECT_EQ(rows[i].machine, want[i].machine);
      EXPECT_EQ(rows[i].rank, static_cast<int>(i + 1));
      EXPECT_NEAR(rows[i].vs_pct, want[i].vs * 100, 1e-9);
      EXPECT_EQ(rows[i].vs_text, fmt::format("{:+.1f}%", want[i].vs * 100));
      EXPECT_EQ(rows[i].outlier, want[i].outlier);
      EXPECT_EQ(rows[i].note.find("<b>outlier</b>") != std::string::npos, want[i].outlier);
      outliers += want[i].outlier;
    }
  }
  EXPECT_EQ(outliers, 3u);  // d on both cases, e on the GEMM only
  // The capped board is an outlier of its own hardware, its cap named as what differs.
  auto gemm = ranking_rows(html, kGemm);
  auto e = std::find_if(gemm.begin(), gemm.end(), [](auto& r) { return r.machine == "e"; });
  ASSERT_NE(e, gemm.end());
  EXPECT_NE(e->note.find("power_limit_w: 500 (others 700)"), std::string::npos) << e->note;
  // The outliers come first, furthest from the median first: d (GEMM), d (SiLU), e (GEMM).
  std::regex outlier_row(R"re(<tr data-case="([^"]+)" data-machine="([^"]+)">)re");
  std::vector<std::string> order;
  for (std::sregex_iterator it(html.begin(), html.end(), outlier_row), end; it != end; ++it)
    order.push_back(std::string((*it)[2]) + (std::string((*it)[1]) == html_escape(kGemm) ? " gemm" : " silu"));
  EXPECT_EQ(order, (std::vector<std::string>{"d gemm", "d silu", "e gemm"}));
  EXPECT_LT(html.find("<h3>Outliers</h3>"), html.find("fleet-heatmap-0"));
  EXPECT_NE(html.find("<details open><summary>Every outlier (3)"), std::string::npos);  // a short list is open
  // Per machine: d twice, then e with its cap.
  std::regex machine_row(R"re(<tr data-outlier-machine="([^"]+)">.*?<td class="num" data-v="(\d+)">.*?<td>([^<]*)</td></tr>)re");
  std::vector<std::string> machines;
  for (std::sregex_iterator it(html.begin(), html.end(), machine_row), end; it != end; ++it)
    machines.push_back(std::string((*it)[1]) + " " + std::string((*it)[2]) + " " + std::string((*it)[3]));
  EXPECT_EQ(machines, (std::vector<std::string>{"d 2 none recorded", "e 1 power_limit_w: 500 (others 700)"}));
  EXPECT_NE(html.find("<p>5 machines (5 &times; H100, 1755 MHz, 700 W); 2 cases ran on several machines; <b>3 outliers</b>"),
            std::string::npos);
}

TEST(FleetReport, HeatmapHoldsEveryCellAndMarksTheOutliers) {
  auto set = fleet_set();
  nlohmann::json specs = nlohmann::json::array();
  auto html = fleet_html({set}, specs);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0]["id"], "fleet-heatmap-0");
  EXPECT_NE(html.find("id=\"fleet-heatmap-0\""), std::string::npos);
  auto& values = specs[0]["spec"]["data"]["values"];
  ASSERT_EQ(values.size(), 10u);
  for (auto* case_string : {kGemm, kSilu})
    for (auto& want : expected_ranking(set, case_string)) {
      auto cell = std::find_if(values.begin(), values.end(),
                               [&](auto& v) { return v["case"] == case_string && v["machine"] == want.machine; });
      ASSERT_NE(cell, values.end()) << want.machine;
      EXPECT_NEAR((*cell)["pct"].template get<double>(), want.vs * 100, 1e-9);
      EXPECT_EQ((*cell)["outlier"].template get<bool>(), want.outlier);
    }
  EXPECT_EQ(specs[0]["spec"]["layer"][1]["transform"][0]["filter"], "datum.outlier");
}

TEST(FleetReport, HeatmapOfAHugeFleetKeepsTheCasesWithMostOutliers) {
  auto set = fleet_set();
  auto machines = scale::machines_of(set.context);
  auto fleet = scale::fleet_view(set.results, machines);
  auto chart = fleet_heatmap_chart(fleet, "x", 5);  // room for one case of five machines
  ASSERT_TRUE(chart);
  auto& values = chart->spec["data"]["values"];
  ASSERT_EQ(values.size(), 5u);
  for (auto& v : values) EXPECT_EQ(v["case"], kGemm);  // two outliers, against the SiLU's one
  EXPECT_NE(chart->caption.find("Shown: the 1 of 2 cases with the most outliers (at most 5 cells)"), std::string::npos);
  EXPECT_EQ(fleet_heatmap_chart(fleet, "x")->spec["data"]["values"].size(), 10u);
}

TEST(FleetReport, AbsentForOneMachineOrResultsWithoutAFleet) {
  auto one = fleet_set();
  one.context["fleet"] = nlohmann::json::array({one.context["fleet"][0]});
  std::erase_if(one.results, [](auto& r) { return r.details.at(kMachineDetail) != "a"; });
  for (auto& set : {one, report_set()}) {
    nlohmann::json specs = nlohmann::json::array();
    EXPECT_EQ(fleet_html({set}, specs), "");
    EXPECT_TRUE(specs.empty());
    auto html = html_report({set});
    EXPECT_EQ(html.find("id=\"fleet\""), std::string::npos);
    EXPECT_EQ(html.find("fleet-heatmap"), std::string::npos);
  }
}

TEST(FleetReport, StaysOneSelfContainedFile) {
  auto html = html_report({fleet_set()});
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)")));
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("table.sortable"), std::string::npos);  // its sorting script is inline
}

TEST(FleetReport, SixtyFourGpusByFiftyCasesStayCompact) {
  nlohmann::json specs = nlohmann::json::array();
  auto html = fleet_html({big_fleet(64, 50)}, specs);
  // Nine of the 64 (every seventh, from the fourth) are 10% slow on all 50 cases.
  EXPECT_NE(html.find("<p>64 machines (64 &times; H100, 1755 MHz, 700 W); 50 cases ran on several machines; <b>450 outliers</b>"),
            std::string::npos);
  // Summarised: one row per slow machine, the 450 outliers and every table beyond collapsed.
  std::size_t machine_rows = 0;
  for (auto at = html.find("<tr data-outlier-machine="); at != std::string::npos; at = html.find("<tr data-outlier-machine=", at + 1))
    ++machine_rows;
  EXPECT_EQ(machine_rows, 9u);
  EXPECT_NE(html.find("<details><summary>Every outlier (450)"), std::string::npos);
  EXPECT_EQ(html.find("<details open"), std::string::npos);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0]["spec"]["data"]["values"].size(), 64u * 50u);
  EXPECT_LT(html.size() + specs.dump().size(), 3u << 20);
}

TEST(FleetJson, MatchesTheViewAndSummarisesEachMachine) {
  auto set = fleet_set();
  auto machines = scale::machines_of(set.context);
  auto j = scale::fleet_json(scale::fleet_view(set.results, machines), machines);
  EXPECT_EQ(j["schema"], "opmeter-fleet/1");
  EXPECT_EQ(j["outlier_threshold"], 0.05);
  ASSERT_EQ(j["cases"].size(), 2u);
  for (auto& c : j["cases"]) {
    auto want = expected_ranking(set, c["case"]);
    ASSERT_EQ(c["entries"].size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(c["entries"][i]["rank"], i + 1);
      EXPECT_EQ(c["entries"][i]["machine"], want[i].machine);
      EXPECT_NEAR(c["entries"][i]["vs_hardware_median"].get<double>(), want[i].vs, 1e-12);
      EXPECT_EQ(c["entries"][i]["outlier"], want[i].outlier);
    }
  }
  // Each machine's median and worst deviation over the two cases (two values: their mean, and
  // the one further from 0).
  std::map<std::string, std::vector<double>> vs;
  for (auto* case_string : {kGemm, kSilu})
    for (auto& e : expected_ranking(set, case_string)) vs[e.machine].push_back(e.vs);
  ASSERT_EQ(j["machines"].size(), 5u);
  for (auto& m : j["machines"]) {
    auto& v = vs[m["name"].get<std::string>()];
    EXPECT_NEAR(m["median_vs_hardware_median"].get<double>(), (v[0] + v[1]) / 2, 1e-12) << m["name"];
    EXPECT_NEAR(m["worst_vs_hardware_median"].get<double>(), std::abs(v[0]) > std::abs(v[1]) ? v[0] : v[1], 1e-12) << m["name"];
    EXPECT_EQ(m["cases"], 2) << m["name"];
    EXPECT_EQ(m["hardware"], "H100, 1755 MHz, 700 W") << m["name"];  // the cap is environment, not hardware
    EXPECT_EQ(m["outliers"], m["name"] == "d" ? 2 : m["name"] == "e" ? 1 : 0) << m["name"];
    if (m["name"] == "e") {
      EXPECT_EQ(m["environment"]["power_limit_w"], "500");
    }
  }
}

// End to end: four CPU "machines" written as a sharded run's ranks, one slow; merge writes
// fleet.json and a report with the section; report of the merged directory and of the tree too.
TEST(FleetReport, MergeAndReportOfATreeShowTheFleet) {
  auto dir = temp_dir("fleet_tree");
  const std::string kase = "gemm/reference/fp32/M=8,N=8,K=8/threads=1";
  const std::vector<double> times = {1.0e-5, 1.01e-5, 0.99e-5, 1.4e-5};
  for (int rank = 0; rank < 4; ++rank) {
    auto run_dir = dir / "tree" / fmt::format("rank{:03}-of-4-host{}-cpu", rank, rank);
    fs::create_directories(run_dir);
    nlohmann::json context = {{"host_name", fmt::format("host{}", rank)},
                              {"opmeter", {{"version", "1"}, {"git_sha", "abc"}}},
                              {"cpu", {{"model", "Test CPU"}, {"usable_cpus", 2}, {"governor", rank == 3 ? "powersave" : "performance"}}}};
    nlohmann::json run = {{"config", "sweep.yaml"}, {"shard", {{"rank", rank}, {"size", 4}}}};
    write(run_dir, "run.json", nlohmann::json({{"run", run}, {"context", context}}).dump());
    Result r = measured(kase, times[rank]);
    r.summary.median = times[rank];
    write(run_dir, "results.jsonl", to_json(r).dump() + "\n");
  }
  auto merged = cli(fmt::format("merge {} -o {}", (dir / "tree").string(), (dir / "merged").string()));
  ASSERT_EQ(merged.code, 0) << merged.text;
  std::ifstream json_file(dir / "merged" / "fleet.json");
  ASSERT_TRUE(json_file) << merged.text;
  auto j = nlohmann::json::parse(json_file);
  ASSERT_EQ(j["cases"].size(), 1u);
  auto& slowest = j["cases"][0]["entries"][3];
  EXPECT_EQ(slowest["machine"], "rank003-of-4-host3-cpu");
  EXPECT_NEAR(slowest["vs_hardware_median"].get<double>(), 1.4 / ((1.0 + 1.01) / 2) - 1, 1e-9);  // the middle two of four
  EXPECT_TRUE(slowest["outlier"].get<bool>());
  auto read = [](const fs::path& p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  for (auto input : {dir / "merged", dir / "tree"}) {
    auto html_path = dir / (input.filename().string() + ".html");
    auto report = cli(fmt::format("report {} -o {} --no-md", input.string(), html_path.string()));
    ASSERT_EQ(report.code, 0) << report.text;
    auto html = read(html_path);
    EXPECT_NE(html.find("<h2 id=\"fleet\">Fleet</h2>"), std::string::npos) << input;
    EXPECT_NE(html.find("<tr data-machine=\"rank003-of-4-host3-cpu\" class=\"outlier\">"), std::string::npos) << input;
    EXPECT_NE(html.find("governor: powersave (others performance)"), std::string::npos) << input;
  }
  EXPECT_NE(read(dir / "merged" / "report.html").find("<h2 id=\"fleet\">Fleet</h2>"), std::string::npos);
  EXPECT_NE(read(dir / "merged" / "report.md").find("\n## Fleet\n"), std::string::npos);  // merge's markdown report too
  // The merged table and CSV name each result's machine; a one-machine run's keep their columns.
  const auto md = read(dir / "merged" / "results.md");
  EXPECT_NE(md.find("| machine |"), std::string::npos) << md;
  EXPECT_NE(md.find("| rank002-of-4-host2-cpu |"), std::string::npos) << md;
  const auto csv = read(dir / "merged" / "results.csv");
  const auto header = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(header.substr(header.size() - 14), ",label,machine") << header;
  EXPECT_NE(csv.find(",rank003-of-4-host3-cpu\n"), std::string::npos) << csv;
  Result alone = measured(kase, 1e-5);
  EXPECT_EQ(csv_table({}, {alone}).find("machine"), std::string::npos);
  EXPECT_EQ(markdown_table({alone}).find("machine"), std::string::npos);
}

// The context records the board's default power limit beside the enforced one, so a capped GPU
// is compared with its identical siblings (and its cap named) instead of standing alone.
TEST(Nvml, ReadsTheBoardsDefaultPowerLimitBesideTheCap) {
  setenv("FAKE_NVML_CAP_W", "500", 1);
  Nvml nvml(FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.reason();
  std::string why;
  auto device = nvml.device("", 0, why);
  ASSERT_TRUE(device) << why;
  EXPECT_EQ(nvml.power_limit_w(*device), 500.0);
  EXPECT_EQ(nvml.power_limit_default_w(*device), 700.0);
  unsetenv("FAKE_NVML_CAP_W");
}
