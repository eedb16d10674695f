// run --calibration checks the profile it is given: one of another machine is used with a warning
// that names what differs; an impossible or malformed one is refused (exit 2) naming file and key.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "opmeter/context.hpp"
#include "tests/cli_helpers.hpp"

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

nlohmann::json profile() {
  return {{"schema", "opmeter-calibration/1"},
          {"threads", 1},
          {"device", "cpu"},
          {"ceiling_rule", "rate of the fastest tenth of samples (the median's below 10 samples)"},
          {"peak_gflops", {{"fp32", 50.0}}},
          {"bandwidth", {{"memory_gbps", 10.0}}}};
}

Output run_with(const fs::path& dir, const nlohmann::json& p) {
  auto file = write(dir, "calibration.json", p.dump());
  return cli(fmt::format("run --case relu/opmeter/fp32/batch=1,seq=4,hidden=64/threads=1 --calibration {} --dry-run",
                         file.string()));
}
}  // namespace

TEST(ProfileCheck, AProfileOfAnotherMachineIsUsedWithOneWarningNamingWhatDiffers) {
  auto dir = temp_dir("profile_other_machine");
  const auto& here = opmeter::cpu_info();
  auto p = profile();
  p["context"] = {{"cpu",
                   {{"model", "AMD EPYC 9654 96-Core Processor"},
                    {"logical_cpus", here.logical_cpus + 190},
                    {"isa_flags", here.flags}}}};
  auto out = run_with(dir, p);
  ASSERT_EQ(out.code, 0) << out.text;
  const std::string warning = fmt::format(
      "--calibration {}: warning: measured on another machine (CPU 'AMD EPYC 9654 96-Core Processor', "
      "here '{}'; {} logical CPUs, here {}): % of peak and of bandwidth against it are of that machine's "
      "ceilings, not this one's",
      (dir / "calibration.json").string(), here.model, here.logical_cpus + 190, here.logical_cpus);
  EXPECT_EQ(count(out.text, warning), 1u) << out.text;

  p["context"]["cpu"]["model"] = here.model;  // this machine's: nothing said
  p["context"]["cpu"]["logical_cpus"] = here.logical_cpus;
  out = run_with(dir, p);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(has(out.text, "another machine")) << out.text;
  // A flag a kernel or microcode update brings is no other machine; a vector unit is.
  p["context"]["cpu"]["isa_flags"].push_back("flush_l1d_x");
  out = run_with(dir, p);
  EXPECT_FALSE(has(out.text, "another machine")) << out.text;
  p["context"]["cpu"]["isa_flags"].push_back("avx_x_test");
  out = run_with(dir, p);
  EXPECT_TRUE(has(out.text, "ISA avx_x_test that this CPU lacks")) << out.text;
}

TEST(ProfileCheck, ImpossibleOrMalformedValuesAreRefusedNamingFileAndKey) {
  auto dir = temp_dir("profile_bad_values");
  const std::string prefix = "--calibration " + (dir / "calibration.json").string() + ": ";
  struct Row {
    const char* key;
    nlohmann::json value;
    std::string says;
  };
  for (auto& [key, value, says] :
       std::vector<Row>{{"threads", 2.9, "threads must be a whole number from 1 to 4096"},
                        {"threads", 0, "threads must be a whole number"},
                        {"threads", -3, "threads must be a whole number"},
                        {"device", "banana", "device: unknown device 'banana'"},
                        {"fusion", "garbage", "fusion must be the object opmeter calibrate writes"},
                        {"peak_gflops", {{"fp32", 1.7e308}}, "peak_gflops.fp32 = 1.7e+308 GFLOP/s is impossible"}}) {
    auto p = profile();
    p[key] = value;
    auto out = run_with(dir, p);
    EXPECT_EQ(out.code, 2) << key << "\n" << out.text;
    EXPECT_TRUE(has(out.text, prefix + says)) << out.text;
  }
}
