// The pipeline files: pipelines.json round trip, summary.csv, pipeline_layers.csv, the logs, bad
// files, and the console summary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "opmeter/errors.hpp"
#include "pipeline/present/pipeline_outputs.hpp"
#include "tests/pipeline_fixtures.hpp"
#include "util/human_units.hpp"

using namespace opmeter;
using namespace opmeter::pipeline;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("opmeter_pipeline_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

// Three summaries: complete with end to end, incomplete, and one without energy.
std::vector<PipelineSummary> three_summaries() {
  std::vector<PipelineSummary> out;
  {
    auto h = fixtures::hand_run();
    Result model = fixtures::hand_result("model", 5e-3, 0.4);
    h.run.end_to_end = &model;
    h.run.end_to_end_scale = 2;
    out.push_back(summarize(h.run));
  }
  {
    auto h = fixtures::hand_run();
    h.run.pipeline.name = "toy, \"quoted\"";
    h.run.layer_results[2] = nullptr;
    out.push_back(summarize(h.run));
  }
  {
    auto h = fixtures::hand_run();
    for (auto& r : h.results) r.energy_j.reset();
    h.results[0].energy_reason = "RAPL is not readable";
    h.results[0].flags = {"unconverged"};
    h.run.device = "cuda:0";
    out.push_back(summarize(h.run));
  }
  return out;
}

void expect_same(const std::optional<double>& a, const std::optional<double>& b, const std::string& what) {
  ASSERT_EQ(a.has_value(), b.has_value()) << what;
  if (a) {
    EXPECT_DOUBLE_EQ(*a, *b) << what;
  }
}

}  // namespace

TEST(PipelineOutputs, JsonRoundTripsEveryField) {
  auto dir = temp_dir("roundtrip");
  auto written = three_summaries();
  write_pipeline_outputs(dir.string(), written);
  auto j = nlohmann::json::parse(slurp(dir / "pipelines.json"));
  EXPECT_EQ(j["schema"], "opmeter-pipelines/1");
  EXPECT_TRUE(j["pipelines"][1]["latency_s"].is_null());  // empty, not 0
  auto read = read_pipelines(dir.string());
  ASSERT_EQ(read.size(), written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    auto &a = written[i], &b = read[i];
    EXPECT_EQ(b.source, dir.string());  // where it was read from, never a field of the file
    EXPECT_FALSE(j["pipelines"][i].contains("source"));
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.params, b.params);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.samples, b.samples);
    EXPECT_EQ(a.sample_unit, b.sample_unit);
    EXPECT_EQ(a.total_params, b.total_params);
    EXPECT_EQ(a.total_macs, b.total_macs);
    EXPECT_EQ(a.complete, b.complete);
    EXPECT_EQ(a.missing, b.missing);
    expect_same(a.latency_s, b.latency_s, "latency");
    expect_same(a.throughput, b.throughput, "throughput");
    expect_same(a.energy_j, b.energy_j, "energy");
    expect_same(a.dynamic_energy_j, b.dynamic_energy_j, "dynamic");
    expect_same(a.energy_per_sample_j, b.energy_per_sample_j, "per sample");
    expect_same(a.dynamic_energy_per_sample_j, b.dynamic_energy_per_sample_j, "dynamic per sample");
    EXPECT_EQ(a.energy_reason, b.energy_reason);
    expect_same(a.idle_power_w, b.idle_power_w, "idle");
    expect_same(a.period_s, b.period_s, "period");
    expect_same(a.pipeline_parallel_throughput, b.pipeline_parallel_throughput, "pp throughput");
    expect_same(a.pipeline_parallel_energy_j, b.pipeline_parallel_energy_j, "pp energy");
    ASSERT_EQ(a.top_by_time.size(), b.top_by_time.size());
    for (std::size_t k = 0; k < a.top_by_time.size(); ++k) {
      EXPECT_EQ(a.top_by_time[k].layer, b.top_by_time[k].layer);
      EXPECT_DOUBLE_EQ(a.top_by_time[k].value, b.top_by_time[k].value);
      expect_same(a.top_by_time[k].share, b.top_by_time[k].share, "share");
    }
    EXPECT_EQ(a.top_by_energy.size(), b.top_by_energy.size());
    EXPECT_EQ(a.end_to_end_case, b.end_to_end_case);
    EXPECT_EQ(a.end_to_end_status, b.end_to_end_status);
    EXPECT_EQ(a.end_to_end_scale, b.end_to_end_scale);
    expect_same(a.end_to_end_s, b.end_to_end_s, "e2e");
    expect_same(a.end_to_end_energy_j, b.end_to_end_energy_j, "e2e energy");
    expect_same(a.end_to_end_ratio, b.end_to_end_ratio, "ratio");
    expect_same(a.end_to_end_energy_ratio, b.end_to_end_energy_ratio, "energy ratio");
    ASSERT_EQ(a.layers.size(), b.layers.size());
    for (std::size_t k = 0; k < a.layers.size(); ++k) {
      auto &x = a.layers[k], &y = b.layers[k];
      EXPECT_EQ(x.label, y.label);
      EXPECT_EQ(x.op, y.op);
      EXPECT_EQ(x.case_string, y.case_string);
      EXPECT_EQ(x.impl, y.impl);
      EXPECT_EQ(x.count, y.count);
      EXPECT_EQ(x.status, y.status);
      EXPECT_EQ(x.reason, y.reason);
      EXPECT_EQ(x.flags, y.flags);
      EXPECT_EQ(x.energy_reason, y.energy_reason);
      EXPECT_EQ(x.params, y.params);
      EXPECT_EQ(x.macs, y.macs);
      for (auto [f, name] : {std::pair{&LayerSummary::latency_s, "latency"}, {&LayerSummary::total_s, "total"},
                             {&LayerSummary::power_w, "power"}, {&LayerSummary::energy_j, "energy"},
                             {&LayerSummary::total_energy_j, "total energy"}, {&LayerSummary::idle_energy_j, "idle"},
                             {&LayerSummary::dynamic_energy_j, "dynamic"}, {&LayerSummary::flops, "flops"},
                             {&LayerSummary::bytes, "bytes"}, {&LayerSummary::pct_roofline, "roofline"},
                             {&LayerSummary::pct_peak, "peak"}})
        expect_same(x.*f, y.*f, name);
    }
  }
}

TEST(PipelineOutputs, SummaryCsvHasOneRowPerPipeline) {
  auto csv = lines(summary_csv(three_summaries()));
  ASSERT_EQ(csv.size(), 4u);
  EXPECT_EQ(csv[0],
            "name,params,macs,batch,dtype,device,complete,latency_ms,throughput,unit,energy_j,dynamic_energy_j,"
            "energy_per_sample_j,pipeline_parallel_energy_j,period_ms,idle_power_w,end_to_end_ms,ratio,pipeline_params");
  // 7 ms, 8/7e-3 img/s, 0.48 J, 0.41 J, 0.06 J/img, 0.53 J, 4 ms, 10 W; end to end 5 ms x 2 = 10 ms;
  // the parameters that tell two pipelines of one name apart.
  EXPECT_EQ(csv[1], "toy,207,2000,8,fp32,cpu,true,7,1142.86,img/s,0.48,0.41,0.06,0.53,4,10,10,0.7,\"batch=8, image=32\"");
  // Quoted name; incomplete: empty totals, never 0.
  EXPECT_EQ(csv[2], "\"toy, \"\"quoted\"\"\",207,2000,8,fp32,cpu,false,,,img/s,,,,,,10,,,\"batch=8, image=32\"");
  EXPECT_EQ(csv[3], "toy,207,2000,8,fp32,cuda:0,true,7,1142.86,img/s,,,,,4,10,,,\"batch=8, image=32\"");
}

TEST(PipelineOutputs, LayersCsvHasOneRowPerLayer) {
  auto csv = lines(layers_csv(three_summaries()));
  ASSERT_EQ(csv.size(), 1u + 9u);
  EXPECT_EQ(csv[0].rfind("pipeline,device,index,label,op,impl,count,status,reason,latency_ms,total_ms", 0), 0u);
  EXPECT_EQ(csv[2].rfind("toy,cpu,1,block.fc,linear,opmeter,2,ok,,2,4,75,0.15,0.3,0.02,0.13,50,500,1000000,400000,50,,,,", 0), 0u)
      << csv[2];
  EXPECT_NE(csv[6].find(",block.act,relu,,4,not-measured,no result for this layer in the run,"), std::string::npos) << csv[6];
  EXPECT_NE(csv[7].find(",unconverged,RAPL is not readable,"), std::string::npos) << csv[7];
  EXPECT_TRUE(csv[2].ends_with(",fp32,\"batch=8, image=32\"")) << csv[2];  // dtype and parameters
}

TEST(PipelineOutputs, TwoPipelinesOfOneNameHaveTwoDisplayNames) {
  PipelineSummary small, large;
  small.name = large.name = "resnet18";
  small.dtype = large.dtype = "fp32";
  small.device = large.device = "cpu";
  small.params = {{"batch", "1"}, {"image", "32"}};
  large.params = {{"batch", "1"}, {"image", "224"}};
  EXPECT_EQ(display_name(small), "resnet18 fp32 cpu batch=1 image=32");  // image=224 is the default
  EXPECT_EQ(display_name(large), "resnet18 fp32 cpu batch=1");
}

TEST(PipelineOutputs, LogPerPipelineWithTableAndTotals) {
  auto dir = temp_dir("logs");
  auto summaries = three_summaries();
  write_pipeline_outputs(dir.string(), summaries);
  // Two named toy: the device tells them apart; the odd name is made safe.
  EXPECT_EQ(log_file_names(summaries),
            (std::vector<std::string>{"pipeline-toy-cpu.log", "pipeline-toy___quoted_.log", "pipeline-toy-cuda_0.log"}));
  auto log = slurp(dir / "pipeline-toy-cpu.log");
  EXPECT_NE(log.find("opmeter pipeline toy on cpu, fp32 (batch=8, image=32)"), std::string::npos) << log;
  EXPECT_NE(log.find("block.fc"), std::string::npos);
  EXPECT_NE(log.find("7.000 ms"), std::string::npos) << log;
  EXPECT_NE(log.find("480.000 mJ"), std::string::npos) << log;
  EXPECT_NE(log.find("period 4.000 ms"), std::string::npos) << log;
  EXPECT_NE(log.find("530.000 mJ per pass"), std::string::npos) << log;
  EXPECT_NE(log.find("sum of layers / end to end: 0.70"), std::string::npos) << log;
  EXPECT_NE(log.find("1. block.fc (linear x 2): 4.000 ms, 57.1%"), std::string::npos) << log;
  auto incomplete = slurp(dir / "pipeline-toy___quoted_.log");
  EXPECT_NE(incomplete.find("INCOMPLETE: 1 layer(s) not measured"), std::string::npos) << incomplete;
  EXPECT_NE(incomplete.find("block.act (relu): not-measured"), std::string::npos);
  auto no_energy = slurp(dir / "pipeline-toy-cuda_0.log");
  EXPECT_NE(no_energy.find("layer stem.conv: RAPL is not readable"), std::string::npos) << no_energy;
  // A config's own pipeline has no builder parameters: no empty "()" in its log either.
  auto own = summaries[0];
  own.params.clear();
  EXPECT_EQ(pipeline_log(own).rfind("opmeter pipeline toy on cpu, fp32\n", 0), 0u) << pipeline_log(own);
  EXPECT_EQ(lines(slurp(dir / "summary.csv")).size(), 4u);
  EXPECT_EQ(lines(slurp(dir / "pipeline_layers.csv")).size(), 10u);
  EXPECT_FALSE(fs::exists(dir / "report.html"));  // no report in the directory: none written
}

TEST(PipelineOutputs, ReadingBadFilesSaysWhatIsWrong) {
  auto dir = temp_dir("bad");
  EXPECT_TRUE(read_pipelines(dir.string()).empty());  // no pipelines.json: no pipelines
  auto error = [&](const std::string& text) {
    std::ofstream(dir / "pipelines.json") << text;
    try {
      read_pipelines(dir.string());
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error("{oops").find("pipelines.json: not JSON"), std::string::npos);
  EXPECT_NE(error(R"({"schema": "other/1", "pipelines": []})").find("expected \"schema\": \"opmeter-pipelines/1\""),
            std::string::npos);
  EXPECT_NE(error(R"({"schema": 3})").find("not opmeter pipelines"), std::string::npos);
  EXPECT_NE(error(R"({"schema": "opmeter-pipelines/1"})").find("'pipelines' should be a list"), std::string::npos);
  auto good = to_json(three_summaries()[0]);
  auto with = [&](nlohmann::json p) { return nlohmann::json{{"schema", kPipelinesSchema}, {"pipelines", {p}}}.dump(); };
  auto p = good;
  p.erase("dtype");
  EXPECT_NE(error(with(p)).find("pipeline toy: 'dtype' is missing"), std::string::npos) << error(with(p));
  p = good;
  p["latency_s"] = "fast";
  EXPECT_NE(error(with(p)).find("pipeline toy.latency_s: expected a number or null"), std::string::npos) << error(with(p));
  p = good;
  p["layers"][1]["count"] = "two";
  EXPECT_NE(error(with(p)).find("pipeline toy layer 1.count: expected a number"), std::string::npos) << error(with(p));
  p = good;
  p["top_by_time"][0]["layer"] = 9;
  EXPECT_NE(error(with(p)).find("top_by_time[0].layer: 9 is not one of the 3 layers"), std::string::npos) << error(with(p));
  EXPECT_EQ(error(with(good)), "(no error)");
}

TEST(PipelineOutputs, ConsoleSummaryIsShort) {
  auto summaries = three_summaries();
  std::ostringstream out;
  print_pipeline_summary(out, summaries[0]);
  auto text = out.str();
  EXPECT_NE(text.find("pipeline toy (batch=8, image=32) fp32 on cpu: 207 params, 2.00 k MACs, 3 layers"), std::string::npos)
      << text;
  EXPECT_NE(text.find("7.000 ms per pass, 1143 img/s; 480.000 mJ per pass, 60.000 mJ per img"), std::string::npos) << text;
  EXPECT_NE(text.find("top layers: block.fc 4.000 ms (57%), block.act 2.000 ms (29%), stem.conv 1.000 ms (14%)"),
            std::string::npos)
      << text;
  EXPECT_LE(lines(text).size(), 6u);
  // A config's own pipeline has no builder parameters: no empty "()".
  auto own = summaries[0];
  own.params.clear();
  std::ostringstream plain;
  print_pipeline_summary(plain, own);
  EXPECT_EQ(plain.str().rfind("pipeline toy fp32 on cpu: 207 params", 0), 0u) << plain.str();
  std::ostringstream incomplete;
  print_pipeline_summary(incomplete, summaries[1]);
  EXPECT_NE(incomplete.str().find("INCOMPLETE, no totals: 1 layer(s) not measured; first: block.act (relu)"),
            std::string::npos)
      << incomplete.str();
  std::ostringstream no_energy;
  print_pipeline_summary(no_energy, summaries[2]);
  EXPECT_NE(no_energy.str().find("energy: layer stem.conv: RAPL is not readable"), std::string::npos) << no_energy.str();
}

TEST(PipelineOutputs, HumanUnits) {
  EXPECT_EQ(human_energy(1.5), "1.500 J");
  EXPECT_EQ(human_energy(0.0123), "12.300 mJ");
  EXPECT_EQ(human_energy(4.5e-6), "4.500 uJ");
  EXPECT_EQ(human_energy(-0.002), "-2.000 mJ");
  EXPECT_EQ(human_count(11.69e6), "11.69 M");
  EXPECT_EQ(human_count(1.8e9), "1.80 G");
  EXPECT_EQ(human_count(12), "12");
  // Throughputs to 4 digits, never as 4.533e+04 (the probe's console, log and report.md).
  EXPECT_EQ(human_rate(45330.7), "45330");
  EXPECT_EQ(human_rate(45335), "45340");
  EXPECT_EQ(human_rate(2.9648e6), "2965000");
  EXPECT_EQ(human_rate(9999.4), "9999");
  EXPECT_EQ(human_rate(9999.7), "10000");  // {:.4g} would print 1e+04
  EXPECT_EQ(human_rate(354.44), "354.4");
  EXPECT_EQ(human_rate(0.5), "0.5");
  EXPECT_EQ(human_rate(-1), "-");
}

// A pass of 0.1 ms at 8 images: 80000 img/s in the log, the console and the report, plain.
TEST(PipelineOutputs, LargeThroughputsArePlainNumbers) {
  auto h = fixtures::hand_run();
  for (auto& r : h.results) r.summary.median /= 70;  // 7 ms a pass -> 0.1 ms
  auto s = summarize(h.run);
  EXPECT_NE(pipeline_log(s).find("  throughput" + std::string(14, ' ') + "80000 img/s\n"), std::string::npos)
      << pipeline_log(s);
  std::ostringstream out;
  print_pipeline_summary(out, s);
  EXPECT_NE(out.str().find(", 80000 img/s;"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("e+"), std::string::npos) << out.str();
}
