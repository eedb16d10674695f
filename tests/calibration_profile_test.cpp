// The calibration profile is one type, written and read in one place: what it writes reads back
// the same, and a profile written by an earlier opmeter still reads.
#include <gtest/gtest.h>

#include <fstream>

#include "opmeter/errors.hpp"
#include "engine/runner.hpp"
#include "engine/calibration_profile.hpp"
#include "tests/test_paths.hpp"

using namespace opmeter;

TEST(CalibrationProfile, WhatItWritesReadsBackTheSame) {
  CalibrationProfile p;
  p.created = "2026-11-25T23:00:00Z";
  p.threads = 2;
  p.device = "cpu";
  p.peak_gflops = {{"fp32", 210.5}, {"bf16", 400}};
  p.bandwidth.memory_gbps = 31.5;
  p.bandwidth.array_bytes = 1e9;
  p.bandwidth.kernels = {{"copy", 30}, {"triad", 31.5}};
  p.bandwidth.caches = nlohmann::json::array({{{"level", "L1d"}, {"array_bytes", 24576}, {"read_gbps", 500}}});
  p.bandwidth.note = "a note";
  p.fusion = {{"rows", nlohmann::json::array()}};
  p.context = {{"cpu", {{"usable_cpus", 2}}}};
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j["schema"], kCalibrationSchema);
  EXPECT_EQ(j["bandwidth"]["memory_gbps"], 31.5);
  EXPECT_EQ(j["peak_gflops"]["bf16"], 400);
  const CalibrationProfile back = CalibrationProfile::from_json(j);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(back.peak_gflops, p.peak_gflops);
  EXPECT_EQ(back.bandwidth.kernels, p.bandwidth.kernels);
  EXPECT_EQ(back.threads, 2);
}

TEST(CalibrationProfile, AProfileWrittenBeforeTheTypeStillReads) {
  const std::string path = std::string(opmeter_source_dir()) + "/docs/results/cpu-amd-epyc-zen5-2c/predict-2026-11-23/calibration.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << path;
  const nlohmann::json old = nlohmann::json::parse(f);
  const CalibrationProfile p = CalibrationProfile::from_json(old);
  EXPECT_EQ(p.threads, old["threads"].get<int>());
  EXPECT_EQ(p.bandwidth.memory_gbps, old["bandwidth"]["memory_gbps"].get<double>());
  EXPECT_EQ(p.peak_gflops.size(), old["peak_gflops"].size());
  for (auto& [dtype, gflops] : old["peak_gflops"].items()) EXPECT_EQ(p.peak_gflops.at(dtype), gflops.get<double>());
  EXPECT_EQ(p.to_json(), old);  // written again, the same file
}

TEST(CalibrationProfile, WhatIsNoProfileSaysWhy) {
  auto message = [](const nlohmann::json& j) {
    try {
      CalibrationProfile::from_json(j);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json good = {{"schema", kCalibrationSchema},
                         {"threads", 1},
                         {"peak_gflops", {{"fp32", 10.0}}},
                         {"bandwidth", {{"memory_gbps", 5.0}}}};
  EXPECT_EQ(CalibrationProfile::from_json(good).device, "cpu");  // the minimal profile: the host's
  EXPECT_NE(message({{"schema", "results/1"}}).find("not an opmeter calibration profile"), std::string::npos);
  // A file of another kind is named, as `predict cal.json` names a profile given as a model.
  EXPECT_EQ(message({{"schema", "opmeter-predict-model/1"}}),
            "this is an opmeter file of another kind (opmeter-predict-model/1), not a calibration profile (expected "
            "\"schema\": \"opmeter-calibration/1\", as opmeter calibrate writes)");
  EXPECT_NE(message({{"benchmarks", nlohmann::json::array()}}).find("these are results (opmeter run writes them)"),
            std::string::npos);
  EXPECT_NE(message({{"schema", "opmeter-calibration/2"}}).find("a calibration profile of another opmeter"),
            std::string::npos);
  auto bad = good;
  bad["peak_gflops"]["fp33"] = 1.0;
  EXPECT_NE(message(bad).find("unknown dtype 'fp33'"), std::string::npos) << message(bad);
  bad = good;
  bad["bandwidth"]["memory_gbps"] = 0;
  EXPECT_NE(message(bad).find("bandwidth.memory_gbps must be a positive number"), std::string::npos) << message(bad);
  bad = good;
  bad.erase("threads");
  EXPECT_NE(message(bad).find("malformed"), std::string::npos) << message(bad);
}
