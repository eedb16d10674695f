// The calibration profile is one type, written and read in one place: what it writes reads back
// the same, and a profile written by an earlier opmeter still reads.
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

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

namespace {
nlohmann::json minimal_profile() {
  return {{"schema", kCalibrationSchema},
          {"threads", 2},
          {"peak_gflops", {{"fp32", 10.0}}},
          {"bandwidth", {{"memory_gbps", 5.0}}}};
}

std::string error_of(const nlohmann::json& j) {
  try {
    CalibrationProfile::from_json(j);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(CalibrationProfile, ThreadsAreAWholeNumberFromOne) {
  for (nlohmann::json bad :
       {nlohmann::json(2.9), nlohmann::json(0), nlohmann::json(-3), nlohmann::json("2"), nlohmann::json(4097)}) {
    auto j = minimal_profile();
    j["threads"] = bad;
    EXPECT_EQ(error_of(j),
              "threads must be a whole number from 1 to 4096 (the threads it was measured with), got " + bad.dump());
  }
  auto j = minimal_profile();
  j["threads"] = 4096;
  EXPECT_EQ(CalibrationProfile::from_json(j).threads, 4096);
}

TEST(CalibrationProfile, AnUnknownDeviceAndAFusionThatIsNoProfileAreRefused) {
  auto j = minimal_profile();
  j["device"] = "banana";
  EXPECT_EQ(error_of(j).rfind("device: unknown device 'banana'", 0), 0u) << error_of(j);
  for (nlohmann::json bad : {nlohmann::json("garbage"), nlohmann::json(3), nlohmann::json({{"patterns", "x"}})}) {
    j = minimal_profile();
    j["fusion"] = bad;
    EXPECT_EQ(error_of(j).rfind("fusion must be the object opmeter calibrate writes", 0), 0u) << error_of(j);
  }
  j = minimal_profile();
  j["fusion"] = {{"patterns", nlohmann::json::array()}, {"thresholds", {{"fuse_at_speedup", 1.1}}}};
  EXPECT_EQ(error_of(j), "no error");
}

// The bounds, worked out by hand: per thread and cycle 4 pipes x 16 fp32 lanes x 2 = 128 FLOP (64
// in fp64, 2048 on AMX-BF16), at 6 GHz; 192 bytes a cycle. Two threads: fp32 1536 GFLOP/s, fp64
// 768, bf16 24576, bandwidth 2304 GB/s. A GPU: 1e8 GFLOP/s and 1e5 GB/s.
TEST(CalibrationProfile, RatesNoMachineReachesAreRefusedNamingTheKey) {
  struct Row {
    const char* dtype;
    double ok, impossible;
  };
  for (auto [dtype, ok, impossible] : {Row{"fp32", 1530, 1540}, Row{"fp64", 767, 769}, Row{"bf16", 24500, 24600}}) {
    auto j = minimal_profile();
    j["peak_gflops"][dtype] = ok;
    EXPECT_EQ(error_of(j), "no error") << dtype;
    j["peak_gflops"][dtype] = impossible;
    EXPECT_EQ(error_of(j).rfind(fmt::format("peak_gflops.{} = {} GFLOP/s is impossible", dtype, impossible), 0), 0u)
        << error_of(j);
  }
  auto j = minimal_profile();
  j["peak_gflops"]["fp32"] = 1.7e308;
  EXPECT_NE(error_of(j).find("peak_gflops.fp32 = 1.7e+308 GFLOP/s is impossible: above 1536, the most 2 threads"),
            std::string::npos)
      << error_of(j);
  j = minimal_profile();
  j["bandwidth"]["memory_gbps"] = 2300;
  EXPECT_EQ(error_of(j), "no error");
  j["bandwidth"]["memory_gbps"] = 2310;
  EXPECT_EQ(error_of(j).rfind("bandwidth.memory_gbps = 2310 GB/s is impossible: above 2304", 0), 0u) << error_of(j);
  j = minimal_profile();
  j["bandwidth"]["kernels"] = {{"copy", 5.0}, {"triad", 1e300}};
  EXPECT_EQ(error_of(j).rfind("bandwidth.kernels.triad = 1e+300 GB/s is impossible", 0), 0u) << error_of(j);
  j = minimal_profile();
  j["bandwidth"]["caches"] = {{{"level", 1}, {"array_bytes", 24576}, {"read_gbps", 5000}}};
  EXPECT_EQ(error_of(j).rfind("bandwidth.caches[0].read_gbps = 5000 GB/s is impossible", 0), 0u) << error_of(j);
  // A GPU's: an H200's ~2e6 GFLOP/s of fp8 reads; 1000 times it does not.
  j = minimal_profile();
  j["device"] = "cuda:0";
  j["peak_gflops"] = {{"fp8", 2e6}};
  j["bandwidth"]["memory_gbps"] = 4800;
  EXPECT_EQ(error_of(j), "no error");
  j["peak_gflops"]["fp8"] = 2e9;
  EXPECT_NE(error_of(j).find("peak_gflops.fp8 = 2e+09 GFLOP/s is impossible: above 1e+08"), std::string::npos)
      << error_of(j);
}

TEST(CalibrationProfile, AProfileWithEveryRateTimesAThousandIsRefused) {
  std::ifstream f(std::string(opmeter_source_dir()) +
                  "/docs/results/cpu-amd-epyc-zen5-2c/predict-2026-11-23/calibration.json");
  ASSERT_TRUE(f);
  nlohmann::json j = nlohmann::json::parse(f);
  for (auto& [dtype, gflops] : j["peak_gflops"].items()) gflops = gflops.get<double>() * 1000;
  EXPECT_EQ(error_of(j).rfind("peak_gflops.", 0), 0u) << error_of(j);
}

TEST(CalibrationProfile, TheMachineItWasMeasuredOnIsComparedWithThisOne) {
  auto j = minimal_profile();
  j["context"] = {{"cpu",
                   {{"model", "AMD EPYC 9654 96-Core Processor"},
                    {"logical_cpus", 192},
                    {"isa_flags", {"avx2", "avx512f", "avx512_bf16"}}}}};
  const auto p = CalibrationProfile::from_json(j);
  nlohmann::json here = {{"cpu", {{"model", "Intel Xeon"}, {"logical_cpus", 2}, {"isa_flags", {"avx2", "amx_bf16"}}}}};
  EXPECT_EQ(machine_differences(p, here),
            (std::vector<std::string>{"CPU 'AMD EPYC 9654 96-Core Processor', here 'Intel Xeon'",
                                      "192 logical CPUs, here 2", "ISA avx512_bf16 avx512f that this CPU lacks",
                                      "without ISA amx_bf16 that this CPU has"}));
  EXPECT_TRUE(machine_differences(p, j["context"]).empty());
  EXPECT_TRUE(machine_differences(CalibrationProfile::from_json(minimal_profile()), here).empty());  // nothing recorded

  j["device"] = "cuda:1";
  j["context"]["gpus"] = {{{"device", "cuda:0"}, {"name", "NVIDIA H200"}},
                          {{"device", "cuda:1"}, {"name", "NVIDIA A100"}}};
  here["gpus"] = {{{"device", "cuda:1"}, {"name", "NVIDIA H200"}}};
  EXPECT_EQ(machine_differences(CalibrationProfile::from_json(j), here),
            std::vector<std::string>{"GPU 'NVIDIA A100', here 'NVIDIA H200'"});  // a device's: its GPU only
}
