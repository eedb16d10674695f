// Chart specs from fixture results: which charts exist, what data they carry, how they encode it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "report/charts.hpp"
#include "tests/report_fixture.hpp"

using namespace opmeter;
using namespace opmeter::fixtures;
using nlohmann::json;

namespace {

std::set<std::string> field_values(const json& values, const std::string& key) {
  std::set<std::string> out;
  for (auto& v : values) out.insert(v[key].is_string() ? v[key].get<std::string>() : v[key].dump());
  return out;
}

const json* find_row(const json& values, const std::string& key, const json& value) {
  for (auto& v : values)
    if (v[key] == value) return &v;
  return nullptr;
}

}  // namespace

// A run of two thread counts has a roofline per count: a threads=1 case is drawn under the
// threads=1 peak and bandwidth, not under the best of both.
TEST(Charts, RooflineHasOneRoofPerThreadCount) {
  auto result = [](const std::string& kase, double gflops, double gbps, double intensity) {
    Result r;
    r.kase = parse_case(kase);
    r.case_string = r.kase.to_string();
    r.status = Status::ok;
    r.summary.median = 1e-3;  // fewer than 10 samples: a ceiling's rate is its median's
    r.gflops = gflops;
    r.gbps = gbps;
    r.intensity = intensity;
    r.work.flops = gflops * 1e6;
    r.work.bytes_read = gbps * 1e6 + 1e9;  // a ceiling's bandwidth case moves enough bytes
    return r;
  };
  std::vector<Result> rs = {result("peak/opmeter/fp32/kernel=fma/threads=1", 100, 0, 0),
                            result("peak/opmeter/fp32/kernel=fma/threads=2", 190, 0, 0),
                            result("bandwidth/opmeter/fp32/kernel=copy,n=67108864/threads=1", 0, 10, 0),
                            result("bandwidth/opmeter/fp32/kernel=copy,n=67108864/threads=2", 0, 16, 0),
                            result("gemm/onednn/fp32/M=64,N=64,K=64/threads=1", 50, 5, 10),
                            result("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 90, 9, 10)};
  auto chart = roofline_chart(rs);
  ASSERT_TRUE(chart);
  const json& lines = chart->spec["layer"][0]["data"]["values"];
  EXPECT_EQ(field_values(lines, "ceiling"),
            (std::set<std::string>{"fp32 peak 100 GFLOP/s (threads=1)", "fp32 peak 190 GFLOP/s (threads=2)"}));
  for (auto& l : lines) {  // each roof bends at its own ridge: min(peak, bandwidth x intensity)
    const bool one = l["ceiling"] == "fp32 peak 100 GFLOP/s (threads=1)";
    const double peak = one ? 100 : 190, bandwidth = one ? 10 : 16, at = l["intensity"].get<double>();
    EXPECT_NEAR(l["gflops"].get<double>(), std::min(peak, bandwidth * at), 1e-9 * peak) << l.dump();
  }
  EXPECT_NE(chart->caption.find("one roofline per thread count"), std::string::npos) << chart->caption;
  // One thread count: the names as before, without it.
  std::vector<Result> two = {rs[1], rs[3], rs[5]};
  EXPECT_EQ(field_values(roofline_chart(two)->spec["layer"][0]["data"]["values"], "ceiling"),
            (std::set<std::string>{"fp32 peak 190 GFLOP/s"}));
}

TEST(Charts, GemmHeatmapKeepsTheBestImplPerCell) {
  auto chart = gemm_heatmap_chart(report_results());
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->kind, "gemm-heatmap");
  const json& spec = chart->spec;
  EXPECT_EQ(spec["$schema"], kVegaLiteSchema);
  auto& values = spec["data"]["values"];
  // fp32: 9 cells (onednn beats openblas in each); bf16: 9 cells; the 64^3 cases are one cell more
  // for fp32 (unconverged still counts as measured).
  EXPECT_EQ(values.size(), 19u);
  EXPECT_EQ(field_values(values, "impl"), (std::set<std::string>{"onednn"}));
  EXPECT_EQ(field_values(values, "dtype"), (std::set<std::string>{"bf16", "fp32"}));
  EXPECT_EQ(spec["facet"]["row"]["field"], "K");
  EXPECT_EQ(spec["facet"]["column"]["field"], "dtype");
  EXPECT_EQ(spec["spec"]["layer"][0]["mark"]["type"], "rect");
  EXPECT_EQ(spec["spec"]["layer"][0]["encoding"]["color"]["field"], "tflops");
  const json* cell = find_row(values, "case", "gemm/onednn/bf16/M=1024,N=1024,K=1024/threads=2");
  ASSERT_NE(cell, nullptr);
  EXPECT_NEAR((*cell)["tflops"].get<double>(), 0.6, 0.01);  // 300 x 2 (bf16) x 1.0 GFLOP/s
}

TEST(Charts, GemmChartsNeedMoreThanOnePoint) {
  auto w = gemm_work(256, 256, 256);
  std::vector<Result> one = {measured("gemm/onednn/fp32/M=256,N=256,K=256/threads=2", time_at(w, 100), w)};
  EXPECT_FALSE(gemm_heatmap_chart(one));
  EXPECT_FALSE(dtype_curves_chart(one));
  std::vector<Result> none = {with_status("gemm/onednn/fp32/M=256,N=256,K=256/threads=2", Status::failed, "x")};
  EXPECT_FALSE(gemm_heatmap_chart(none));
  EXPECT_TRUE(report_charts(none).empty());
}

TEST(Charts, DtypeCurvesUseSquareSizesOnly) {
  auto chart = dtype_curves_chart(report_results());
  ASSERT_TRUE(chart);
  auto& values = chart->spec["data"]["values"];
  for (auto& v : values) {
    EXPECT_EQ(v["M"], v["N"]);
    EXPECT_EQ(v["N"], v["K"]);
  }
  EXPECT_EQ(values.size(), 3u + 3u + 1u);  // 256, 512, 1024 in both dtypes, plus fp32 64^3
  EXPECT_EQ(chart->spec["encoding"]["color"]["field"], "dtype");
  EXPECT_EQ(chart->spec["encoding"]["x"]["scale"]["type"], "log");
}

TEST(Charts, RooflineHasMeasuredCeilingsAndEveryCaseAsAPoint) {
  auto results = report_results();
  auto chart = roofline_chart(results);
  ASSERT_TRUE(chart);
  auto& layers = chart->spec["layer"];
  ASSERT_EQ(layers.size(), 2u);
  auto& lines = layers[0]["data"]["values"];
  auto& points = layers[1]["data"]["values"];
  std::size_t expected = 0;
  for (auto& r : results)
    if (r.status == Status::ok && r.kase.op != "peak" && r.kase.op != "bandwidth") ++expected;
  EXPECT_EQ(points.size(), expected);
  EXPECT_EQ(field_values(points, "op"), (std::set<std::string>{"gemm", "linear", "silu"}));
  // Two ceilings (fp32 about 500 GFLOP/s, bf16 about 800), each bent at its ridge by about 74 GB/s:
  // each the rate of its case's fastest tenth of samples (the nearest rank, sorted here).
  auto fastest_tenth_s = [&](const std::string& op, DType dtype) {
    for (auto& r : results)
      if (r.kase.op == op && r.kase.dtype == dtype) {
        std::vector<double> t = r.samples;
        std::sort(t.begin(), t.end());
        return t[std::size_t(std::ceil(0.1 * double(t.size()))) - 1];
      }
    return 0.0;
  };
  const double fp32 = 5e7 / fastest_tenth_s("peak", DType::fp32) * 1e-9;
  const double bf16 = 8e7 / fastest_tenth_s("peak", DType::bf16) * 1e-9;
  const double gbps = 268435456 / fastest_tenth_s("bandwidth", DType::fp32) * 1e-9;
  EXPECT_NEAR(fp32, 500, 5);
  EXPECT_NEAR(bf16, 800, 8);
  const std::string fp32_name = fmt::format("fp32 peak {:.0f} GFLOP/s", fp32);
  auto names = field_values(lines, "ceiling");
  EXPECT_EQ(names, (std::set<std::string>{fmt::format("bf16 peak {:.0f} GFLOP/s", bf16), fp32_name}));
  const json* ridge = nullptr;
  for (auto& l : lines)
    if (l["ceiling"] == fp32_name && std::abs(l["gflops"].get<double>() / fp32 - 1) < 1e-9 &&
        std::abs(l["intensity"].get<double>() / (fp32 / gbps) - 1) < 1e-9)
      ridge = &l;
  EXPECT_NE(ridge, nullptr) << lines.dump();
  for (auto& l : lines) EXPECT_LE(l["gflops"].get<double>(), bf16 * (1 + 1e-9));
  EXPECT_EQ(layers[1]["encoding"]["tooltip"][0]["field"], "case");
  EXPECT_EQ(layers[1]["encoding"]["x"]["scale"]["type"], "log");
}

TEST(Charts, RooflineWithoutCeilingsSaysSo) {
  std::vector<Result> rs;
  for (auto& r : report_results())
    if (r.kase.op != "peak" && r.kase.op != "bandwidth") rs.push_back(r);
  auto chart = roofline_chart(rs);
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->spec["layer"].size(), 1u);
  EXPECT_NE(chart->caption.find("No ceiling was measured"), std::string::npos);
}

TEST(Charts, ImplComparisonPerOpInItsOwnUnit) {
  auto charts = impl_comparison_charts(report_results());
  std::map<std::string, const Chart*> by_id;
  for (auto& c : charts) by_id[c.id] = &c;
  ASSERT_TRUE(by_id.count("impl-gemm"));
  ASSERT_TRUE(by_id.count("impl-silu"));
  ASSERT_TRUE(by_id.count("impl-linear"));
  EXPECT_FALSE(by_id.count("impl-peak"));       // ceilings are not an op to compare
  EXPECT_FALSE(by_id.count("impl-bandwidth"));  // one impl only
  auto& gemm = by_id["impl-gemm"]->spec;
  EXPECT_EQ(gemm["encoding"]["y"]["title"], "GFLOP/s");
  EXPECT_EQ(gemm["encoding"]["strokeDash"]["field"], "dtype");  // two dtypes
  auto& silu = by_id["impl-silu"]->spec;
  EXPECT_EQ(silu["encoding"]["y"]["title"], "GB/s");
  EXPECT_EQ(silu["mark"]["type"], "line");
  EXPECT_EQ(field_values(silu["data"]["values"], "impl"), (std::set<std::string>{"onednn", "opmeter"}));
  const json* row = find_row(silu["data"]["values"], "case", "silu/opmeter/fp32/batch=4,seq=256,hidden=1024/threads=2");
  ASSERT_NE(row, nullptr);
  EXPECT_NEAR((*row)["rate"].get<double>(), 40, 0.5);
  // One size only: bars per impl instead of a line.
  auto& linear = by_id["impl-linear"]->spec;
  EXPECT_EQ(linear["mark"]["type"], "bar");
  EXPECT_EQ(linear["data"]["values"].size(), 3u);
}

TEST(Charts, EfficiencyOnlyWithPowerTopNSorted) {
  auto charts = efficiency_charts(report_results(), 5);
  ASSERT_EQ(charts.size(), 2u);  // GEMM in GFLOP/s/W, silu in GB/s/W
  const Chart* compute = charts[0].id == "efficiency-GFLOP-s-W" ? &charts[0] : &charts[1];
  auto& values = compute->spec["data"]["values"];
  ASSERT_EQ(values.size(), 5u);
  for (std::size_t i = 1; i < values.size(); ++i)
    EXPECT_GE(values[i - 1]["per_watt"].get<double>(), values[i]["per_watt"].get<double>());
  // bf16 onednn at M=1024 runs at 600 GFLOP/s on 116 W: the best of the fixture.
  EXPECT_NEAR(values[0]["per_watt"].get<double>(), 600 / 116.0, 0.05);
  EXPECT_NE(values[0]["case"].get<std::string>().find("gemm/onednn/bf16/M=1024"), std::string::npos);

  std::vector<Result> no_power;
  for (auto r : report_results()) {
    r.avg_power_w.reset();
    no_power.push_back(r);
  }
  EXPECT_TRUE(efficiency_charts(no_power).empty());

  // Energy without an average power (a hand-edited or another tool's record): charted from the
  // energy, work per joule (its FLOP in 4 J), and its power left empty, not read.
  Result energy_only = no_power.front();
  for (auto& r : no_power)
    if (r.kase.op == "gemm") energy_only = r;
  energy_only.energy_j = 4;
  auto energy_charts = efficiency_charts({energy_only});
  ASSERT_EQ(energy_charts.size(), 1u);
  auto& row = energy_charts[0].spec["data"]["values"][0];
  EXPECT_NEAR(row["per_watt"].get<double>(), energy_only.work.flops / 4 / 1e9, 1e-15);
  EXPECT_TRUE(row["power_w"].is_null());
}

TEST(Charts, FusionSpeedupsWithThresholds) {
  auto chart = fusion_chart(report_results());
  ASSERT_TRUE(chart);
  auto& values = chart->spec["data"]["values"];
  ASSERT_EQ(values.size(), 2u);  // onednn and opmeter each against onednn_unfused
  std::map<std::string, double> speedup;  // by fused impl
  for (auto& v : values) {
    auto label = v["label"].get<std::string>();
    speedup[label.substr(label.rfind('(') + 1, label.size() - label.rfind('(') - 2)] = v["speedup"].get<double>();
    EXPECT_EQ(v["verdict"], "fuse");
  }
  EXPECT_NEAR(speedup.at("onednn"), 1.3, 0.02);           // 1.3 ms / 1.0 ms
  EXPECT_NEAR(speedup.at("opmeter"), 1.3 / 1.05, 0.02);  // 1.3 ms / 1.05 ms
  EXPECT_EQ(chart->spec["layer"][1]["mark"]["type"], "rule");
  EXPECT_EQ(chart->spec["layer"][1]["data"]["values"].size(), 3u);
  EXPECT_FALSE(fusion_chart({}));
}

TEST(Charts, ReportOrderAndUniqueIds) {
  auto charts = report_charts(report_results());
  std::vector<std::string> kinds;
  std::set<std::string> ids;
  for (auto& c : charts) {
    if (kinds.empty() || kinds.back() != c.kind) kinds.push_back(c.kind);
    EXPECT_TRUE(ids.insert(c.id).second) << c.id;
    EXPECT_FALSE(c.caption.empty());
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"gemm-heatmap", "dtype-curves", "roofline", "impl-comparison", "efficiency",
                                             "fusion"}));
}

TEST(Charts, BurstBesideSustainedForGpuCases) {
  EXPECT_FALSE(burst_sustained_chart(report_results()));  // CPU results have no sustained figure
  auto chart = burst_sustained_chart(gpu_results());
  ASSERT_TRUE(chart);
  auto& values = chart->spec["data"]["values"];
  ASSERT_EQ(values.size(), 4u);  // two cases x {burst, sustained}
  EXPECT_EQ(field_values(values, "figure"), (std::set<std::string>{"burst", "sustained"}));
  for (auto& v : values) {
    EXPECT_EQ(v["unit"], "TFLOP/s");
    EXPECT_NEAR(v["ratio"].get<double>(), 1 / 1.15, 0.01);
  }
  auto* burst = find_row(values, "figure", "burst");
  ASSERT_TRUE(burst);
  EXPECT_NEAR((*burst)["value"].get<double>(), 820, 10);  // the fixture's bf16 burst
}

TEST(Charts, GpuTelemetryLaysCasesEndToEndAndMarksThePowerCap) {
  EXPECT_FALSE(gpu_telemetry_chart(report_results()));
  auto chart = gpu_telemetry_chart(gpu_results());
  ASSERT_TRUE(chart);
  auto& values = chart->spec["data"]["values"];
  ASSERT_EQ(values.size(), 80u);
  EXPECT_EQ(field_values(values, "state"), (std::set<std::string>{"free", "power cap"}));
  double last_first_case = 0, first_second_case = 1e9;
  for (auto& v : values) {
    if (v["case"].get<std::string>().find("/bf16/") != std::string::npos)
      last_first_case = std::max(last_first_case, v["t"].get<double>());
    else
      first_second_case = std::min(first_second_case, v["t"].get<double>());
  }
  EXPECT_GT(first_second_case, last_first_case);  // the second case starts after the first ends
  EXPECT_EQ(chart->spec["vconcat"].size(), 2u);
}
