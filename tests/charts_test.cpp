// Chart specs from fixture results: which charts exist, what data they carry, how they encode it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
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
  EXPECT_NE(chart->caption.find("one roofline per run, machine, thread count"), std::string::npos) << chart->caption;
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
  EXPECT_EQ(spec["facet"]["column"]["field"], "panel");  // the dtype, one thread count: nothing more
  EXPECT_EQ(field_values(values, "panel"), (std::set<std::string>{"bf16", "fp32"}));
  EXPECT_EQ(spec["spec"]["layer"][0]["mark"]["type"], "rect");
  EXPECT_EQ(spec["spec"]["layer"][0]["encoding"]["color"]["field"], "rate");
  EXPECT_EQ(spec["spec"]["layer"][0]["encoding"]["color"]["title"], "GFLOP/s");  // the best is 0.6 TFLOP/s
  const json* cell = find_row(values, "case", "gemm/onednn/bf16/M=1024,N=1024,K=1024/threads=2");
  ASSERT_NE(cell, nullptr);
  EXPECT_NEAR((*cell)["tflops"].get<double>(), 0.6, 0.01);  // 300 x 2 (bf16) x 1.0 GFLOP/s
  EXPECT_NEAR((*cell)["rate"].get<double>(), 600, 6);
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
  EXPECT_EQ(chart->spec["encoding"]["color"]["field"], "panel");
  EXPECT_EQ(field_values(values, "panel"), (std::set<std::string>{"bf16", "fp32"}));
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

// An int8dq recipe of a bf16 linear computes in int8 and carries the int8 peak (1360 GFLOP/s);
// keyed by the case's dtype it raised the bf16 roof to the int8 peak, 8x the bf16 FMA peak.
TEST(Charts, RooflineKeysEachPeakByTheDtypeItIsThePeakOf) {
  const std::string shape = "batch=1,seq=1,hidden=1024,out=8192,act=none";
  Work lin{2.0 * 1024 * 8192, 1024.0 * 8192 * 2, 8192 * 2};
  auto linear = [&](const std::string& impl, const std::string& quant, double gflops, double peak) {
    Result r = measured("linear/" + impl + "/bf16/" + shape + quant + "/threads=2", lin.flops / (gflops * 1e9), lin);
    r.peak_gflops = peak;
    return r;
  };
  std::vector<Result> rs = {
      measured("peak/opmeter/bf16/kernel=fma/threads=2", 1e-4, {1.704e7, 0, 0}),
      measured("bandwidth/opmeter/fp32/kernel=read,n=268435456/threads=2", 1073741824 / 28e9, {0, 1073741824, 0}),
      linear("onednn", "", 17, 173.7), linear("opmeter_quant", ",quant=int4wo-64", 94, 173.7),
      linear("opmeter_quant", ",quant=int8dq", 60, 1360.6)};
  auto chart = roofline_chart(rs);
  ASSERT_TRUE(chart);
  const json& lines = chart->spec["layer"][0]["data"]["values"];
  EXPECT_EQ(field_values(lines, "ceiling"), (std::set<std::string>{"bf16 peak 174 GFLOP/s", "int8 peak 1361 GFLOP/s"}));
  for (auto& l : lines) {
    if (l["ceiling"].get<std::string>().rfind("bf16", 0) == 0) {
      EXPECT_LE(l["gflops"].get<double>(), 174) << l.dump();
    }
  }
  // Each point says which ceiling bounds it: the int8dq case the int8 peak, the others bf16's.
  for (auto& p : chart->spec["layer"][1]["data"]["values"]) {
    const bool dq = p["case"].get<std::string>().find("int8dq") != std::string::npos;
    EXPECT_EQ(p["ceiling"], dq ? "int8 peak" : "bf16 peak") << p.dump();
  }
  // Without the int8dq case, no int8 roof: its peak came only from that case.
  rs.pop_back();
  EXPECT_EQ(field_values(roofline_chart(rs)->spec["layer"][0]["data"]["values"], "ceiling"),
            (std::set<std::string>{"bf16 peak 174 GFLOP/s"}));
}

// Two runs from two machines have two roofs, each point in its roof's colour: one roof over both
// drew the slower machine's points under the faster machine's ceilings.
TEST(Charts, RooflineOfTwoRunsHasARoofEach) {
  auto run = [](double scale) {
    Work w = gemm_work(256, 256, 256);
    return std::vector<Result>{measured("peak/opmeter/fp32/kernel=fma/threads=2", 1e-4 / scale, {1.7e7, 0, 0}),
                               measured("bandwidth/opmeter/fp32/kernel=read,n=268435456/threads=2",
                                        1073741824 / (16e9 * scale), {0, 1073741824, 0}),
                               measured("gemm/onednn/fp32/M=256,N=256,K=256/threads=2", time_at(w, 100 * scale), w)};
  };
  auto charts = report_charts({run(1), run(0.25)}, {"x/machA", "x/machB"});
  const Chart* roof = nullptr;
  for (auto& c : charts)
    if (c.id == "roofline") roof = &c;
  ASSERT_NE(roof, nullptr);
  auto& lines = roof->spec["layer"][0];
  auto& points = roof->spec["layer"][1];
  EXPECT_EQ(field_values(lines["data"]["values"], "ceiling"),
            (std::set<std::string>{"fp32 peak 170 GFLOP/s (run machA, threads=2)",
                                   "fp32 peak 43 GFLOP/s (run machB, threads=2)"}));
  EXPECT_EQ(field_values(points["data"]["values"], "roof"),
            (std::set<std::string>{"run machA, threads=2", "run machB, threads=2"}));
  EXPECT_EQ(lines["encoding"]["color"]["field"], "roof");
  EXPECT_EQ(points["encoding"]["color"]["field"], "roof");
  EXPECT_FALSE(roof->spec.contains("resolve"));  // one colour scale: a roof and its points match
  EXPECT_GE(points["encoding"]["color"]["legend"]["labelLimit"].get<int>(), 300);
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

namespace {

// Whether any channel of a spec (or of its layers) aggregates, or a bar chart's y stacks.
bool sums_rates(const json& spec) {
  const json encoding = spec.value("encoding", json::object());  // items() of a temporary would dangle
  for (auto& [channel, enc] : encoding.items())
    if (enc.is_object() && enc.contains("aggregate")) return true;
  if (spec.contains("mark") && spec["mark"].value("type", "") == "bar" &&
      !(spec["encoding"]["y"].contains("stack") && spec["encoding"]["y"]["stack"].is_null()))
    return true;
  if (spec.contains("transform")) return true;
  for (auto& l : spec.value("layer", json::array()))
    if (sums_rates(l)) return true;
  return false;
}

}  // namespace

// One size per op: a bar per result. Two runs, two thread counts, hot and cold of one impl are
// bars of their own, each at its own rate; a bar chart that stacked them showed their sum (two
// runs of 14 GB/s read 28 GB/s, above the machine's bandwidth).
TEST(Charts, ImplBarsAreOneResultEachNeverASum) {
  const std::string shape = "batch=16,seq=512,hidden=4096";
  const double bytes = 16.0 * 512 * 4096 * 4 * 2;
  auto silu = [&](const std::string& impl, const std::string& how, double gbps) {
    return measured("silu/" + impl + "/fp32/" + shape + "/" + how, bytes / (gbps * 1e9), {bytes, bytes / 2, bytes / 2});
  };
  std::vector<Result> run1 = {silu("opmeter", "threads=1", 14.2), silu("opmeter", "threads=2", 20),
                              silu("opmeter", "threads=2,hot", 30), silu("onednn", "threads=1", 9)};
  std::vector<Result> run2 = {silu("opmeter", "threads=1", 14.0), silu("onednn", "threads=1", 10.2)};
  auto charts = report_charts({run1, run2}, {"m/a/tour-ops", "m/b/tour-ops"});
  const Chart* chart = nullptr;
  for (auto& c : charts)
    if (c.id == "impl-silu") chart = &c;
  ASSERT_NE(chart, nullptr);
  const json& spec = chart->spec;
  EXPECT_EQ(spec["mark"]["type"], "bar");
  EXPECT_FALSE(sums_rates(spec)) << spec["encoding"].dump();
  EXPECT_EQ(spec["encoding"]["x"]["field"], "impl");
  EXPECT_EQ(spec["encoding"]["xOffset"]["field"], "variant");
  // One row per result, each at its own rate, and no two at one place (impl, variant, dtype).
  auto& values = spec["data"]["values"];
  ASSERT_EQ(values.size(), 6u);
  std::set<std::string> places;
  for (auto& v : values)
    places.insert(v["impl"].get<std::string>() + "|" + v["variant"].get<std::string>() + "|" +
                  v["dtype"].get<std::string>());
  EXPECT_EQ(places.size(), values.size()) << values.dump(1);
  std::map<std::string, double> rate;
  for (auto& v : values) rate[v["series"].get<std::string>()] = v["rate"].get<double>();
  EXPECT_EQ(rate.size(), 6u) << values.dump(1);
  EXPECT_NEAR(rate["opmeter (threads=1, cold, run a/tour-ops)"], 14.2, 0.3) << values.dump(1);
  EXPECT_NEAR(rate["opmeter (threads=1, cold, run b/tour-ops)"], 14.0, 0.3);
  EXPECT_NEAR(rate["opmeter (threads=2, hot, run a/tour-ops)"], 30, 0.6);
  EXPECT_NEAR(rate["onednn (threads=1, cold, run b/tour-ops)"], 10.2, 0.2);
  for (auto& [series, r] : rate) EXPECT_LE(r, 30 * 1.02) << series;  // no bar is a sum
  // The same op measured twice in one series (two shapes of one size): two bars, named by shape.
  std::vector<Result> shapes = {silu("opmeter", "threads=1", 14), silu("onednn", "threads=1", 9),
                                measured("silu/opmeter/fp32/batch=32,seq=256,hidden=4096/threads=1", bytes / 16e9,
                                         {bytes, bytes / 2, bytes / 2})};
  auto two = impl_comparison_charts(shapes);
  ASSERT_EQ(two.size(), 1u);
  auto variants = field_values(two[0].spec["data"]["values"], "variant");
  EXPECT_EQ(variants, (std::set<std::string>{"", shape, "batch=32,seq=256,hidden=4096"}));
  EXPECT_FALSE(sums_rates(two[0].spec));
}

// A `random:` shapes sweep has hundreds of distinct M, N and K: as a heatmap, a canvas of
// 8673 x 952353 px that no browser draws. Past a few distinct values the chart is a scatter.
TEST(Charts, GemmHeatmapOfManyShapesIsAScatter) {
  std::vector<Result> grid, random;
  for (int m : {256, 512, 1024})
    for (int n : {256, 512, 1024}) {
      auto w = gemm_work(m, n, 256);
      grid.push_back(measured(fmt::format("gemm/onednn/fp32/M={},N={},K=256/threads=2", m, n), time_at(w, 100), w));
    }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> size(16, 4096);
  for (int i = 0; i < 240; ++i) {
    const int m = size(rng), n = size(rng), k = size(rng);
    auto w = gemm_work(m, n, k);
    random.push_back(measured(fmt::format("gemm/onednn/fp32/M={},N={},K={}/threads=2", m, n, k), time_at(w, 80), w));
  }
  auto heat = gemm_heatmap_chart(grid);
  ASSERT_TRUE(heat);
  EXPECT_EQ(heat->kind, "gemm-heatmap");
  EXPECT_TRUE(heat->spec.contains("facet"));
  auto scatter = gemm_heatmap_chart(random);
  ASSERT_TRUE(scatter);
  EXPECT_EQ(scatter->kind, "gemm-scatter");
  EXPECT_FALSE(scatter->spec.contains("facet"));
  EXPECT_EQ(scatter->spec["mark"]["type"], "point");
  EXPECT_EQ(scatter->spec["width"], 620);
  EXPECT_EQ(scatter->spec["height"], 380);
  EXPECT_EQ(scatter->spec["encoding"]["x"]["field"], "gflop");
  auto& values = scatter->spec["data"]["values"];
  EXPECT_EQ(values.size(), 240u);
  for (auto& v : values) {  // each point at its own work and rate
    const double m = v["M"].get<double>(), n = v["N"].get<double>(), k = v["K"].get<double>();
    EXPECT_NEAR(v["gflop"].get<double>(), 2 * m * n * k * 1e-9, 1e-9 * m * n * k);
    EXPECT_NEAR(v["rate"].get<double>(), 80, 1);  // GFLOP/s: the best point is under 1 TFLOP/s
  }
  EXPECT_EQ(scatter->spec["encoding"]["y"]["title"], "GFLOP/s");
  // Many M and N over one K and one dtype: as many cells as a heatmap can hold still draw as one.
  std::vector<Result> wide;
  for (int m = 1; m <= 30; ++m) {
    auto w = gemm_work(m * 16, 64, 64);
    wide.push_back(measured(fmt::format("gemm/onednn/fp32/M={},N=64,K=64/threads=2", m * 16), time_at(w, 50), w));
    auto w2 = gemm_work(m * 16, 128, 64);
    wide.push_back(measured(fmt::format("gemm/onednn/fp32/M={},N=128,K=64/threads=2", m * 16), time_at(w2, 50), w2));
  }
  EXPECT_EQ(gemm_heatmap_chart(wide)->kind, "gemm-scatter");  // 30 distinct M: over the 24 a heatmap draws
  wide.resize(40);                                            // 20 M x 2 N
  EXPECT_EQ(gemm_heatmap_chart(wide)->kind, "gemm-heatmap");
}

// Threads 1 and 2 of one GEMM shape were two rects and two labels printed over each other in
// one cell, and one line of the dtype curves zig-zagged between them under one legend entry:
// each thread count is a panel (a line) of its own, named in the legend.
TEST(Charts, GemmChartsKeepThreadCountsApart) {
  std::vector<Result> rs;
  for (int threads : {1, 2})
    for (int size : {256, 512}) {
      auto w = gemm_work(size, size, size);
      rs.push_back(measured(fmt::format("gemm/onednn/fp32/M={0},N={0},K={0}/threads={1}", size, threads),
                            time_at(w, 50.0 * threads), w));
    }
  auto heat = gemm_heatmap_chart(rs);
  ASSERT_TRUE(heat);
  auto& values = heat->spec["data"]["values"];
  EXPECT_EQ(values.size(), 4u);
  std::set<std::string> cells;  // (panel, K, M, N): one rect each
  for (auto& v : values) cells.insert(v["panel"].get<std::string>() + v["K"].dump() + v["M"].dump() + v["N"].dump());
  EXPECT_EQ(cells.size(), 4u);
  EXPECT_EQ(heat->spec["facet"]["column"]["field"], "panel");
  EXPECT_EQ(field_values(values, "panel"), (std::set<std::string>{"fp32 (threads=1)", "fp32 (threads=2)"}));
  // The label has the digits to tell 50 from 100 GFLOP/s: GFLOP/s below 1 TFLOP/s, 3 digits.
  EXPECT_EQ(heat->spec["spec"]["layer"][1]["encoding"]["text"]["format"], ".3~r");
  EXPECT_NEAR(find_row(values, "case", "gemm/onednn/fp32/M=256,N=256,K=256/threads=1")->at("rate").get<double>(), 50,
              0.5);
  auto curves = dtype_curves_chart(rs);
  ASSERT_TRUE(curves);
  EXPECT_EQ(curves->spec["encoding"]["color"]["field"], "panel");
  EXPECT_FALSE(curves->spec["encoding"].contains("detail"));
  EXPECT_EQ(field_values(curves->spec["data"]["values"], "panel"),
            (std::set<std::string>{"fp32 (threads=1)", "fp32 (threads=2)"}));
}

// The impl line chart joined threads 1 and 2, hot and cold, both runs and every quantization
// recipe of one impl into one line: each is a line of its own, named in the legend.
TEST(Charts, ImplLinesAreOneSeriesEach) {
  std::vector<Result> rs;
  for (int batch : {1, 4})
    for (const char* how : {"threads=1", "threads=2", "threads=2,hot"})
      for (const char* impl : {"opmeter", "onednn"}) {
        const double bytes = batch * 1048576.0 * 8;
        rs.push_back(measured(fmt::format("silu/{}/fp32/batch={},seq=256,hidden=1024/{}", impl, batch, how),
                              bytes / 20e9, {bytes, bytes / 2, bytes / 2}));
      }
  auto charts = impl_comparison_charts(rs);
  ASSERT_EQ(charts.size(), 1u);
  auto& spec = charts[0].spec;
  EXPECT_EQ(spec["mark"]["type"], "line");
  EXPECT_EQ(spec["encoding"]["color"]["field"], "series");
  EXPECT_FALSE(sums_rates(spec));
  auto series = field_values(spec["data"]["values"], "series");
  EXPECT_EQ(series,
            (std::set<std::string>{"opmeter (threads=1, cold)", "opmeter (threads=2, cold)", "opmeter (threads=2, hot)",
                                   "onednn (threads=1, cold)", "onednn (threads=2, cold)", "onednn (threads=2, hot)"}));
  // A line per series: two sizes each, never two results of one series at one size.
  std::map<std::string, std::set<double>> sizes;
  for (auto& v : spec["data"]["values"]) {
    auto& at = sizes[v["series"].get<std::string>()];
    EXPECT_TRUE(at.insert(v["size"].get<double>()).second) << v.dump();
  }
  // Recipes of one impl: a line each, the unquantized impls by their names alone.
  const std::string shape = ",seq=1,hidden=1024,out=1024,act=none";
  Work lin{2.0 * 1024 * 1024, 1024.0 * 1024 * 2, 2048};
  std::vector<Result> quant;
  for (int batch : {1, 8})
    for (const std::string& tail : {std::string("linear/onednn/bf16/batch={}") + shape,
                                    "linear/opmeter_quant/bf16/batch={}" + shape + ",quant=int8wo",
                                    "linear/opmeter_quant/bf16/batch={}" + shape + ",quant=int4wo-64"}) {
      Work w = lin;
      w.flops *= batch;
      quant.push_back(measured(fmt::format(fmt::runtime(tail), batch) + "/threads=2", 1e-4, w));
    }
  auto q = impl_comparison_charts(quant);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(field_values(q[0].spec["data"]["values"], "series"),
            (std::set<std::string>{"onednn", "opmeter_quant (quant=int8wo)", "opmeter_quant (quant=int4wo-64)"}));
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
