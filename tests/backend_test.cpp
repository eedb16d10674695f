// A device backend added without touching the runner, the case parser or the config reader: a
// fake `fake:N` device whose one impl is the fp64 reference GEMM, brought by the backend itself
// (as a plugin brings its impls), with a setting of its own.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "opmeter/backend.hpp"
#include "config/config.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"

using namespace opmeter;

namespace {

class FakeBackend final : public Backend {
 public:
  std::string name() const override { return "fake"; }
  std::string device_grammar() const override { return "fake:N"; }
  std::string description() const override { return "a fake device"; }
  std::string first_device() const override { return "fake:0"; }
  bool owns(const std::string& device) const override {
    return device.rfind("fake:", 0) == 0 && device.size() > 5 &&
           device.find_first_not_of("0123456789", 5) == std::string::npos;
  }
  std::vector<SettingDef> settings() const override {
    return {{.name = "lanes", .help = "lanes=N (fake lanes)", .check = [](const std::string& v) {
               if (v != "1" && v != "2" && v != "4") throw UsageError("lanes must be 1, 2 or 4");
             }}};
  }
  Support ready() override { return Support::yes(); }
  Support supports(const Case& c) override {
    return c.device_index() == 0 ? Support::yes() : Support::no(fmt::format("no device {} here", c.device));
  }
  std::vector<ImplDef> impls() override {
    const ImplDef* reference = Registry::global().impl("gemm", "reference");
    return {{.op = "gemm",
             .impl = "fakeblas",
             .backends = {"fake"},
             .summary = "the reference GEMM, on a fake device",
             .dtypes = {DType::fp32},
             .make = reference->make}};
  }
  double free_memory(const Case&) override { return double(1u << 30); }
  nlohmann::json context(const std::vector<std::string>& devices) override { return {{"fakes", devices}}; }
};

const BackendRegistrar reg(std::make_unique<FakeBackend>());

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {  // ConfigError too
    return e.what();
  }
  return "no error";
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(Backend, CaseStringsNameItsDevicesAndSettings) {
  auto c = parse_case("gemm/fakeblas/fp32/M=8,N=8,K=8/device=fake:0,lanes=2,hot");
  EXPECT_EQ(&backend_of(c), backend_named("fake"));
  EXPECT_FALSE(c.on_host());
  EXPECT_EQ(c.device_index(), 0);
  EXPECT_EQ(c.setting_int("lanes"), 2);
  EXPECT_TRUE(c.hot);
  EXPECT_EQ(c.to_string(), "gemm/fakeblas/fp32/M=8,N=8,K=8/device=fake:0,lanes=2,hot");
  EXPECT_EQ(parse_case(c.to_string()), c);
  EXPECT_NO_THROW(validate_case(c));
}

TEST(Backend, BadSettingsAndDevicesSayWhatIsExpected) {
  EXPECT_TRUE(has(usage_error([] { parse_case("gemm/fakeblas/fp32/M=8,N=8,K=8/device=fake:0,lanes=3"); }),
                  "lanes must be 1, 2 or 4"));
  EXPECT_TRUE(has(usage_error([] { parse_case("gemm/reference/fp32/M=8,N=8,K=8/threads=1,lanes=2"); }),
                  "lanes=N (fake lanes) needs device=fake:N"));
  EXPECT_TRUE(has(usage_error([] { parse_case("gemm/fakeblas/fp32/M=8,N=8,K=8/device=fake:x"); }),
                  "unknown device 'fake:x' (expected cpu or cuda:N or fake:N)"));
  EXPECT_TRUE(has(usage_error([] { validate_case(parse_case("gemm/fakeblas/fp32/M=8,N=8,K=8/threads=1")); }),
                  "gemm impl 'fakeblas' runs on a fake device, not on cpu (give device=fake:N)"));
  EXPECT_TRUE(has(usage_error([] { validate_case(parse_case("gemm/reference/fp32/M=8,N=8,K=8/device=fake:0")); }),
                  "runs on the CPU, not on fake:0 (give threads=N)"));
}

TEST(Backend, RunsCasesThroughTheRunner) {
  RunOptions o;
  o.stopping.fixed_samples = 3;
  o.stopping.warmup_calls = 1;
  auto r = run_case(parse_case("gemm/fakeblas/fp32/M=16,N=16,K=16/device=fake:0"), o);
  EXPECT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(r.samples.size(), 3u);
  EXPECT_GT(r.gflops, 0);
  EXPECT_EQ(r.cache, "cold");
  EXPECT_EQ(Ceilings::where(r.kase), "fake:0");

  auto absent = run_case(parse_case("gemm/fakeblas/fp32/M=16,N=16,K=16/device=fake:1"), o);
  EXPECT_EQ(absent.status, Status::skipped);
  EXPECT_EQ(absent.reason, "no device fake:1 here");
}

TEST(Backend, ConfigsExpandOntoItsImplsWithItsSettings) {
  auto plan = load_config_text("ops: [gemm]\ndevice: fake:0\nlanes: 4\nshapes: [{name: custom, shapes: [[8, 8, 8]]}]\n",
                               "fake.yaml", 2);
  ASSERT_EQ(plan.cases.size(), 1u);
  EXPECT_EQ(plan.cases[0].to_string(), "gemm/fakeblas/fp32/M=8,N=8,K=8/device=fake:0,lanes=4");
  EXPECT_TRUE(has(usage_error([] { load_config_text("ops: [gemm]\nlanes: 4\nshapes: [{name: pow2}]\n", "cpu.yaml", 2); }),
                  "lanes=N (fake lanes) needs a fake device: device: fake:N"));
  EXPECT_TRUE(has(usage_error([] {
                    load_config_text("ops: [gemm]\ndevice: fake:0\nlanes: 3\nshapes: [{name: pow2}]\n", "fake.yaml", 2);
                  }),
                  "lanes must be 1, 2 or 4"));
}

TEST(Backend, ComputeCeilingsAreAskedOfTheBackendsPeakImpl) {
  // The fake device has no peak impl: no ceiling case is invented for it; the CPU gets its own.
  auto cases = with_needed_peaks({parse_case("gemm/fakeblas/fp32/M=8,N=8,K=8/device=fake:0"),
                                  parse_case("gemm/reference/fp32/M=8,N=8,K=8/threads=1")});
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].to_string(), "peak/opmeter/fp32/kernel=fma/threads=1");
}

namespace {
// Keeps what each reporter call saw: the journal (results.jsonl) is written from report().
struct Recorder : Reporter {
  std::vector<Result> reported;
  void report(const Result& r) override { reported.push_back(r); }
};
}  // namespace

TEST(Backend, CeilingsRunFirstSoEachResultIsReportedAgainstThem) {
  RunOptions o;
  o.stopping.fixed_samples = 2;
  o.stopping.warmup_calls = 1;
  Recorder rec;
  // --case lists may name a ceiling after the results it bounds.
  auto all = run_all({parse_case("gemm/reference/fp32/M=16,N=16,K=16/threads=1"),
                      parse_case("peak/opmeter/fp32/kernel=fma/threads=1")},
                     {}, o, rec, nullptr);
  ASSERT_EQ(rec.reported.size(), 2u);
  EXPECT_EQ(rec.reported[0].kase.op, "peak");
  const Result& gemm = rec.reported[1];
  if (rec.reported[0].status != Status::ok) GTEST_SKIP() << "no peak kernel on this CPU: " << rec.reported[0].reason;
  ASSERT_TRUE(gemm.peak_gflops.has_value());
  // What was reported is what the run returns: the journal and results.json agree.
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].peak_gflops, gemm.peak_gflops);
  EXPECT_EQ(all[1].pct_peak, gemm.pct_peak);
}
