// The CUDA backend from the CPU side (case strings, timing arithmetic, planning, skips without
// a plugin, driver or GPU), and, where a GPU is present, correctness of every CUDA impl.
#include <dlfcn.h>
#include <algorithm>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "engine/graph_timing.hpp"
#include "engine/runner.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/engine.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "ops/peak/peak.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {

// An impl that does nothing; the fake timers below decide what a sample measures.
class NopImpl : public Impl {
 public:
  void setup(const Case&, const SetupOptions&) override {}
  void run(std::size_t) override { ++calls; }
  Check verify(std::uint64_t) override { return {true}; }
  std::size_t calls = 0;
};

// A device timer whose samples take `per_call` seconds per call; every `throttle_every`-th
// sample is reported as taken at a throttled clock.
class FakeDeviceTimer : public SampleTimer {
 public:
  FakeDeviceTimer(double per_call, std::size_t batch, std::size_t throttle_every)
      : per_call_(per_call), batch_(batch), throttle_every_(throttle_every) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    for (std::size_t i = 0; i < calls; ++i) call();
    ++samples_;
    if (throttle_every_ > 0 && samples_ % throttle_every_ == 0) return std::nullopt;
    return per_call_ * static_cast<double>(calls);
  }
  std::size_t fixed_batch() const override { return batch_; }

 private:
  double per_call_;
  std::size_t batch_, throttle_every_, samples_ = 0;
};

bool gpu_present() {
  auto* p = cuda::plugin();
  return p && p->device(0).ok;
}

Stopping fixed(std::size_t samples) {
  Stopping s;
  s.fixed_samples = samples;
  s.warmup_calls = 1;
  return s;
}

// Options of the GPU correctness tests: a few samples, no cool-down, no sustained window.
RunOptions check_only(std::size_t samples) {
  RunOptions o;
  o.stopping = fixed(samples);
  o.energy_window_s = 0;
  o.cooldown_s = 0;
  return o;
}

}  // namespace

TEST(CudaCase, DeviceAndGraphSettingsRoundTrip) {
  auto c = parse_case("gemm/cublaslt/bf16/M=8192,N=8192,K=8192/device=cuda:1,graph=100,hot");
  EXPECT_EQ(c.device, "cuda:1");
  EXPECT_EQ(c.device_index(), 1);
  EXPECT_EQ(c.setting_int("graph"), 100);
  EXPECT_TRUE(c.hot);
  EXPECT_EQ(c.to_string(), "gemm/cublaslt/bf16/M=8192,N=8192,K=8192/device=cuda:1,graph=100,hot");
  EXPECT_EQ(parse_case(c.to_string()), c);
  EXPECT_TRUE(parse_case("gemm/onednn/fp32/M=1,N=1,K=1/threads=2").on_host());
}

TEST(CudaCase, ImplsRunOnlyOnTheirBackend) {
  EXPECT_THROW(validate_case(parse_case("gemm/onednn/fp32/M=8,N=8,K=8/device=cuda:0")), UsageError);
  EXPECT_THROW(validate_case(parse_case("gemm/cublas/fp32/M=8,N=8,K=8/threads=1")), UsageError);
  EXPECT_NO_THROW(validate_case(parse_case("gemm/cublas/fp32/M=8,N=8,K=8/device=cuda:0")));
  try {
    validate_case(parse_case("gemm/onednn/fp32/M=8,N=8,K=8/device=cuda:0"));
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("runs on the CPU, not on cuda:0"), std::string::npos) << e.what();
  }
}

TEST(CudaTiming, ThrottledSamplesAreDiscardedAndCounted) {
  NopImpl impl;
  FakeDeviceTimer timer(1e-6, 1, 3);  // every third sample throttled
  auto m = measure(impl, 1, fixed(10), {}, nullptr, &timer);
  EXPECT_EQ(m.samples.size(), 10u);
  EXPECT_EQ(m.discarded, 4u);  // samples 3, 6, 9, 12 of the 14 taken
  for (double s : m.samples) EXPECT_DOUBLE_EQ(s, 1e-6);
  EXPECT_EQ(m.calls, 10u);  // discarded samples' calls are not counted as measured
}

TEST(CudaTiming, AlwaysThrottledStopsAtTheTimeout) {
  NopImpl impl;
  FakeDeviceTimer timer(1e-6, 1, 1);
  Stopping s = fixed(5);
  s.timeout_s = 0.05;
  auto m = measure(impl, 1, s, {}, nullptr, &timer);
  EXPECT_TRUE(m.samples.empty());
  EXPECT_GT(m.discarded, 0u);
  EXPECT_EQ(m.reason, StopReason::timeout);
}


TEST(CudaTiming, GraphSamplesArePerLaunch) {
  NopImpl impl;
  FakeDeviceTimer timer(2e-6, 100, 0);  // a graph of 100 launches of 2 us
  auto m = measure(impl, 1, fixed(7), {}, nullptr, &timer);
  EXPECT_EQ(m.batch, 100u);
  EXPECT_EQ(m.calls, 700u);
  ASSERT_EQ(m.samples.size(), 7u);
  for (double s : m.samples) EXPECT_DOUBLE_EQ(s, 2e-6);
  EXPECT_NEAR(m.measured_s, 7 * 100 * 2e-6, 1e-12);
  auto costs = launch_costs(400e-6, 500e-6, 100);
  EXPECT_DOUBLE_EQ(costs.host_per_launch_s, 4e-6);
  EXPECT_DOUBLE_EQ(costs.stream_per_launch_s, 5e-6);
  EXPECT_DOUBLE_EQ(launch_costs(1, 1, 0).host_per_launch_s, 0);
}

TEST(CudaPlan, DeviceKeyPicksCudaImplsAndNotesTheRest) {
  auto plan = load_config_text(R"(ops: [gemm, bandwidth, test_cpu_only]
device: cuda:0
graph: 100
dtypes: [bf16, fp8]
bandwidth: {kernels: [copy], sizes_mib: [64]}
shapes: [{name: custom, shapes: [[64, 64, 64]]}]
)",
                               "t.yaml", 2);
  ASSERT_FALSE(plan.cases.empty());
  for (auto& c : plan.cases) {
    EXPECT_EQ(c.device, "cuda:0") << c.to_string();
    EXPECT_EQ(c.setting_int("graph"), 100);
    EXPECT_TRUE(Registry::global().impl(c.op, c.impl)->runs_on("cuda")) << c.to_string();
  }
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("test_cpu_only has no cuda impl yet"), std::string::npos) << plan.notes[0];
  // fp8 is planned for every GEMM impl (the ones without it are skipped with that reason).
  bool lt_fp8 = false;
  for (auto& c : plan.cases) lt_fp8 |= c.to_string() == "gemm/cublaslt/fp8/M=64,N=64,K=64/device=cuda:0,graph=100";
  EXPECT_TRUE(lt_fp8);
}

TEST(CudaPlan, CommandLineDeviceOverridesTheConfig) {
  auto plan = load_config_text("ops: [gemm]\ndtypes: [fp32]\nshapes: [{name: custom, shapes: [[8, 8, 8]]}]\n", "t.yaml", 2,
                               "cuda:3");
  for (auto& c : plan.cases) EXPECT_EQ(c.device, "cuda:3");
  auto cpu = load_config_text("ops: [gemm]\ndevice: cuda:0\ndtypes: [fp32]\nshapes: [{name: custom, shapes: [[8, 8, 8]]}]\n",
                              "t.yaml", 2, "cpu");
  for (auto& c : cpu.cases) EXPECT_TRUE(c.on_host());
}

TEST(CudaCeilings, PeakKernelsAreTheCeilingsNotTheBestGemm) {
  auto result = [](const std::string& c, double gflops) {
    Result r;
    r.kase = parse_case(c);
    r.status = Status::ok;
    r.gflops = gflops;
    return r;
  };
  Ceilings c;
  c.learn(result("gemm/cublaslt/bf16/M=8,N=8,K=8/device=cuda:0", 700000));  // a GEMM is no ceiling
  EXPECT_FALSE(c.peak(DType::bf16, "cuda:0"));
  c.learn(result("peak/cuda/bf16/kernel=mma/device=cuda:0", 600000));
  c.learn(result("peak/cuda/bf16/kernel=wgmma/device=cuda:0", 950000));  // the faster kernel wins
  EXPECT_EQ(c.peak(DType::bf16, "cuda:0"), 950000);
  EXPECT_FALSE(c.peak(DType::bf16, "cuda:1"));
  EXPECT_FALSE(c.peak(DType::bf16, 2));  // the CPU's ceilings are apart
  auto gemm = result("gemm/cublaslt/bf16/M=8,N=8,K=8/device=cuda:0", 760000);
  c.annotate(gemm);
  EXPECT_DOUBLE_EQ(*gemm.pct_peak, 80.0);

  auto cases = with_needed_peaks({parse_case("gemm/cublas/fp32/M=8,N=8,K=8/device=cuda:0"),
                                  parse_case("gemm/cublas/bf16/M=8,N=8,K=8/device=cuda:0")});
  std::vector<std::string> names;
  for (auto& k : cases) names.push_back(k.to_string());
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(names[0], "peak/cuda/fp32/kernel=fma/device=cuda:0");  // ceilings first, fp32 before bf16
  EXPECT_EQ(names[1], "peak/cuda/bf16/kernel=mma/device=cuda:0");
  EXPECT_EQ(names[2], "peak/cuda/bf16/kernel=wgmma/device=cuda:0");
  // A list that has its own peak case for a dtype gets none added for it.
  auto own = with_needed_peaks({parse_case("peak/cuda/bf16/kernel=mma/device=cuda:0"),
                                parse_case("gemm/cublas/bf16/M=8,N=8,K=8/device=cuda:0")});
  EXPECT_EQ(own.size(), 2u);
  // A device's memory ceiling is a copy and a read over arrays of its own size (1 GiB), not the host's.
  auto memory = with_needed_peaks({parse_case("add/cuda/fp32/batch=1,seq=1,hidden=64/device=cuda:0")}, 1024);
  std::vector<std::string> planned;
  for (auto& k : memory) planned.push_back(k.to_string());
  for (const char* kernel : {"copy", "read"})
    EXPECT_NE(std::find(planned.begin(), planned.end(),
                        fmt::format("bandwidth/cuda/fp32/kernel={},n=268435456/device=cuda:0", kernel)),
              planned.end())
        << fmt::format("{}", fmt::join(planned, " "));
}

TEST(CudaPlugin, RegisteredImplsAreKnownEverywhere) {
  for (auto [op, impl] : {std::pair{"gemm", "cublas"}, {"gemm", "cublaslt"}, {"gemm", "cuda"}, {"bandwidth", "cuda"}, {"peak", "cuda"}}) {
    auto* def = Registry::global().impl(op, impl);
    ASSERT_TRUE(def) << op << "/" << impl;
    EXPECT_TRUE(def->runs_on("cuda"));
  }
  auto* lt = Registry::global().impl("gemm", "cublaslt");
  EXPECT_NE(std::find(lt->dtypes.begin(), lt->dtypes.end(), DType::fp8_e4m3), lt->dtypes.end());
}

TEST(CudaPlugin, WithoutAGpuCudaCasesAreSkippedWithTheReason) {
  auto c = parse_case("gemm/cublaslt/bf16/M=64,N=64,K=64/device=cuda:999");
  auto r = run_case(c, {});
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_FALSE(r.reason.empty());
  if (!cuda::plugin()) {
    EXPECT_EQ(r.reason, cuda::load_reason());
  } else {
    bool explained = r.reason.find("no NVIDIA driver") != std::string::npos || r.reason.find("no device cuda:999") != std::string::npos ||
                     r.reason.find("no usable NVIDIA driver") != std::string::npos;
    EXPECT_TRUE(explained) << r.reason;
  }
}

TEST(CudaCli, AbsentPluginSkipsWithWhereItLooked) {
  auto dir = temp_dir("cuda_noplugin");
  std::string cmd = "env OPMETER_CUDA_PLUGIN=/nonexistent/libopmeter_cuda.so " + std::string(opmeter_testbin()) +
                    " run --case 'gemm/cublas/fp32/M=64,N=64,K=64/device=cuda:0' --no-report --out " + (dir / "r3").string() +
                    " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) text += buf.data();
  int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  auto j = nlohmann::json::parse(std::ifstream(dir / "r3" / "results.jsonl"));
  EXPECT_EQ(j["status"], "skipped");
#ifdef OPMETER_HAVE_CUDA
  EXPECT_NE(j["reason"].get<std::string>().find("/nonexistent/libopmeter_cuda.so"), std::string::npos) << j["reason"];
#else
  EXPECT_NE(j["reason"].get<std::string>().find("built without CUDA"), std::string::npos) << j["reason"];
#endif
}

TEST(CudaCeilings, ADeviceProfileHoldsForThatDevice) {
  Ceilings c;
  nlohmann::json profile = {{"schema", kCalibrationSchema}, {"threads", 1}, {"device", "cuda:1"}};
  profile["peak_gflops"]["bf16"] = 900000.0;
  profile["bandwidth"]["memory_gbps"] = 3000.0;
  c.load_profile(profile);
  EXPECT_EQ(c.peak(DType::bf16, "cuda:1"), 900000.0);
  EXPECT_EQ(c.bandwidth("cuda:1"), 3000.0);
  EXPECT_FALSE(c.peak(DType::bf16, "cuda:0"));
  EXPECT_FALSE(c.bandwidth(1));  // not the host's
}

TEST(CudaCli, CalibrateADeviceWithoutAGpuWritesNoProfile) {
  auto dir = temp_dir("calibrate_gpu");
  auto bad = cli("calibrate --device gpu0 --out " + (dir / "p.json").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("unknown device 'gpu0'"), std::string::npos) << bad.text;
  if (gpu_present()) GTEST_SKIP() << "a GPU is here: calibrating it is gpu-check's calibrate step";
  // Refused up front with the reason, as run says it, instead of a directory of skipped cases.
  auto out = cli(fmt::format("calibrate --device cuda:0 --quick --out {} --results {}", (dir / "p.json").string(),
                             (dir / "raw").string()));
  EXPECT_EQ(out.code, 2) << out.text;
  const auto ready = backend_of(std::string("cuda:0")).device_ready("cuda:0");
  ASSERT_FALSE(ready.ok);
  EXPECT_NE(out.text.find("calibrate --device cuda:0: it cannot run here (" + ready.reason + ")"), std::string::npos)
      << out.text;
  EXPECT_FALSE(fs::exists(dir / "p.json"));
  EXPECT_FALSE(fs::exists(dir / "raw"));
}

TEST(CudaCli, DeviceCuda0WithoutAGpuIsAClearSkip) {
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY)) {
    dlclose(driver);
    GTEST_SKIP() << "an NVIDIA driver is installed here: the GPU tests below cover cuda:0";
  }
  auto dir = temp_dir("cuda_nogpu");
  auto cfg = write(dir, "g.yaml", "ops: [gemm, bandwidth, peak]\ndtypes: [bf16]\nstopping: {samples: 3}\n"
                                  "bandwidth: {kernels: [copy], sizes_mib: [1]}\nshapes: [{name: custom, shapes: [[64, 64, 64]]}]\n");
  auto out = cli("run " + cfg.string() + " --device cuda:0 --no-report --out " + (dir / "r").string());
  EXPECT_EQ(out.code, 0) << out.text;
  auto j = nlohmann::json::parse(std::ifstream(dir / "r" / "results.json"));
  ASSERT_FALSE(j["benchmarks"].empty());
  for (auto& b : j["benchmarks"]) {
    EXPECT_EQ(b["status"], "skipped") << b.dump();
    EXPECT_EQ(b["device"], "cuda:0");
  }
  // Said once before the cases, with how many are skipped.
  EXPECT_NE(out.text.find("opmeter: cuda:0 cannot run here ("), std::string::npos) << out.text;
  EXPECT_NE(out.text.find(fmt::format("its {} cases will be recorded as skipped", j["benchmarks"].size())),
            std::string::npos)
      << out.text;
#ifdef OPMETER_HAVE_CUDA
  EXPECT_NE(out.text.find("no NVIDIA driver on this machine (libcuda.so.1 not found)"), std::string::npos) << out.text;
  EXPECT_EQ(j["context"]["gpus"][0]["unavailable"], "no NVIDIA driver on this machine (libcuda.so.1 not found)");
#endif
  auto bad = cli("run --device gpu0 --dry-run");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("unknown device 'gpu0'"), std::string::npos) << bad.text;
}

// --- On a GPU (scripts/gpu-check.sh runs these there) ---------------------------------------------

TEST(CudaDevice, EveryGemmDtypeIsCorrect) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device: " << (cuda::plugin() ? cuda::plugin()->device(0).reason : cuda::load_reason());
  RunOptions o = check_only(3);
  for (const char* impl : {"cublas", "cublaslt", "cuda"})
    for (auto d : Registry::global().impl("gemm", impl)->dtypes)
      for (const char* shape : {"M=256,N=192,K=320", "M=1000,N=1000,K=1000"}) {
        auto c = parse_case(fmt::format("gemm/{}/{}/{}/device=cuda:0", impl, to_string(d), shape));
        auto r = run_case(c, o);
        EXPECT_TRUE(r.status == Status::ok || r.status == Status::skipped) << c.to_string() << ": " << r.reason;
        if (r.status == Status::ok) {
          EXPECT_LE(*r.max_error, *r.tolerance) << c.to_string();
        }
      }
}

TEST(CudaDevice, BandwidthAndPeakKernelsAreCorrect) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  RunOptions o = check_only(3);
  for (const char* k : {"copy", "scale", "add", "triad", "read", "write"})
    for (const char* n : {"1000003", "16777216"}) {
      auto r = run_case(parse_case(fmt::format("bandwidth/cuda/fp32/kernel={},n={}/device=cuda:0", k, n)), o);
      EXPECT_EQ(r.status, Status::ok) << k << " " << n << ": " << r.reason;
    }
  auto peak = run_case(parse_case("peak/cuda/fp32/kernel=fma/device=cuda:0"), o);
  EXPECT_EQ(peak.status, Status::ok) << peak.reason;
  EXPECT_GT(peak.gflops, 1000);
}

TEST(CudaDevice, EveryPeakDtypeAndKernelIsCorrectOrSkippedWithAReason) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  RunOptions o = check_only(3);
  int ran = 0;
  for (auto d : Registry::global().impl("peak", "cuda")->dtypes)
    for (auto& kernel : peak::kernels_for(d, true)) {
      auto c = parse_case(fmt::format("peak/cuda/{}/kernel={}/device=cuda:0", to_string(d), kernel));
      auto r = run_case(c, o);
      if (r.status == Status::skipped) {
        // Only the architecture may rule a kernel out (wgmma off 9.0, fp8 mma below 8.9, no code built).
        EXPECT_TRUE(r.reason.find("compute capability") != std::string::npos || r.reason.find("built for") != std::string::npos)
            << c.to_string() << ": " << r.reason;
        continue;
      }
      ASSERT_EQ(r.status, Status::ok) << c.to_string() << ": " << r.reason;
      ++ran;
      EXPECT_EQ(*r.max_error, 0) << c.to_string();  // bit-exact checksums
      EXPECT_GT(r.gflops, 1000) << c.to_string();
      EXPECT_DOUBLE_EQ(r.work.flops, peak::gpu::flops(d, *peak::gpu::parse_kind(kernel))) << c.to_string();
      EXPECT_NE(r.details["kernel"].find(kernel == "fma" ? "FMA" : kernel == "mma" ? "mma.sync" : "wgmma m64n256"),
                std::string::npos)
          << r.details["kernel"];
    }
  EXPECT_GE(ran, 5);  // fp32 fma and mma of tf32, fp16, bf16, int8 run on every 8.0+ GPU
}

TEST(CudaDevice, GraphModeAndEnergyOnARealGpu) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  RunOptions o;
  o.stopping = fixed(5);
  o.energy_window_s = 0.5;
  o.cooldown_s = 0.1;
  o.heat_max_s = 1;
  auto r = run_case(parse_case("bandwidth/cuda/fp32/kernel=copy,n=4096/device=cuda:0,graph=100"), o);
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(r.batch, 100u);
  EXPECT_EQ(r.details["graph_launches"], "100");
  EXPECT_TRUE(r.details.count("host_launch_overhead_us"));
  EXPECT_TRUE(r.energy_j.has_value() || !r.energy_reason.empty());
  // The sustained window ran, and NVML's telemetry (where readable) covered the case.
  ASSERT_TRUE(r.sustained.has_value());
  EXPECT_GT(r.sustained->summary.median, 0);
  EXPECT_EQ(r.stop_reason, "fixed_count");
  if (!r.details.count("telemetry")) {  // "telemetry" in details holds why there is none
    ASSERT_TRUE(r.telemetry.is_object());
    EXPECT_GE(r.telemetry["t_s"].size(), 10u);  // >= 0.1 s cool-down + 0.5 s window at 10 ms
    EXPECT_TRUE(r.details.count("sm_clock_median_mhz"));
    EXPECT_TRUE(r.details.count("clock_event_reasons"));
  }
}

TEST(CudaDevice, ColdSamplesReadTheirInputsFromMemory) {
  // A read of half of L2, one call a sample either way (the same event and launch cost, ~5 us):
  // hot, it comes from L2; cold, the flush before each sample (a read of twice L2) must have
  // evicted it, so it comes from device memory, which is slower. Half, not a quarter: the bytes'
  // time must stand out of the fixed cost (25 MB from HBM ~ 7.5 us, from L2 ~ 2.5 us on an H100).
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  const auto l2 = cuda::plugin()->device_context(0)["l2_bytes"].get<std::int64_t>();
  if (l2 < (8 << 20)) GTEST_SKIP() << "L2 of " << l2 << " bytes: too small to tell L2 from memory at this size";
  RunOptions o = check_only(30);
  o.stopping.fixed_batch = 1;
  const std::string read = fmt::format("bandwidth/cuda/fp32/kernel=read,n={}/device=cuda:0", l2 / 8);
  auto cold = run_case(parse_case(read), o);
  auto hot = run_case(parse_case(read + ",hot"), o);
  ASSERT_EQ(cold.status, Status::ok) << cold.reason;
  ASSERT_EQ(hot.status, Status::ok) << hot.reason;
  EXPECT_EQ(cold.cache, "cold");
  EXPECT_NE(cold.details["timing"].find("flushed before each sample (by a read"), std::string::npos) << cold.details["timing"];
  EXPECT_EQ(cold.details["l2_flush_bytes"], std::to_string(2 * l2));
  EXPECT_EQ(cold.batch, 1u);
  EXPECT_EQ(hot.batch, 1u);
  EXPECT_GT(cold.summary.median, 1.2 * hot.summary.median) << "cold " << cold.summary.median << " s, hot " << hot.summary.median;
}

TEST(CudaDevice, ColdGraphCasesRotateCopiesOrSayTheyAreHot) {
  // Graph mode does not flush: a cold case is cold there only over copies of its inputs, as many
  // as divide the graph's launches.
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  RunOptions o = check_only(5);
  for (const char* kase : {"linear/cublaslt/bf16/batch=1,seq=1,hidden=4096,out=4096,act=none/device=cuda:0,graph=20",
                           "linear/cuda_quant/bf16/batch=1,seq=1,hidden=4096,out=4096,act=none,quant=int4wo-64/device=cuda:0,graph=20",
                           "gemm/cublaslt/bf16/M=16,N=4096,K=4096/device=cuda:0,graph=20",
                           "gemm/cublas/fp32/M=16,N=2048,K=2048/device=cuda:0,graph=20",
                           "gelu/cuda/bf16/batch=2,seq=512,hidden=4096/device=cuda:0,graph=20",
                           "layernorm/cuda/bf16/batch=2,seq=512,hidden=4096/device=cuda:0,graph=20"}) {
    auto r = run_case(parse_case(kase), o);
    ASSERT_EQ(r.status, Status::ok) << kase << ": " << r.reason;  // the check after timing passed too
    EXPECT_EQ(r.cache, "cold") << kase;
    EXPECT_GE(r.copies, 2u) << kase;  // 8-32 MB read a call against an L2 of tens of MB
    EXPECT_EQ(20 % r.copies, 0u) << kase << ": " << r.copies;
    EXPECT_FALSE(r.details.count("cache")) << kase;
  }
  // Too few launches for the copies, and an impl that reads the same arrays every call: hot, and why.
  auto few = run_case(parse_case("linear/cublaslt/bf16/batch=1,seq=1,hidden=4096,out=4096,act=none/device=cuda:0,graph=1"), o);
  ASSERT_EQ(few.status, Status::ok) << few.reason;
  EXPECT_EQ(few.cache, "hot");
  EXPECT_NE(few.details["cache"].find("do not divide into the 1 calls"), std::string::npos) << few.details["cache"];
  auto same = run_case(parse_case("bandwidth/cuda/fp32/kernel=read,n=262144/device=cuda:0,graph=10"), o);
  ASSERT_EQ(same.status, Status::ok) << same.reason;
  EXPECT_EQ(same.cache, "hot");
  EXPECT_EQ(same.copies, 1u);
  EXPECT_NE(same.details["cache"].find("does not rotate input copies"), std::string::npos) << same.details["cache"];
}

TEST(CudaDevice, TransfersAreOrderedWithTheImplsStream) {
  // Back-to-back checks of large outputs: a download racing the kernel shows as unwritten
  // (poisoned) elements. Repeat the same cases many times.
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
  RunOptions o = check_only(2);
  for (int round = 0; round < 5; ++round) {
    for (const char* c : {"gemm/cuda/fp32/M=1000,N=1000,K=1000/device=cuda:0", "gemm/cublaslt/bf16/M=2048,N=2048,K=2048/device=cuda:0",
                          "bandwidth/cuda/fp32/kernel=triad,n=1000003/device=cuda:0",
                          "bandwidth/cuda/fp32/kernel=copy,n=67108864/device=cuda:0,hot"}) {
      auto r = run_case(parse_case(c), o);
      EXPECT_EQ(r.status, Status::ok) << c << ": " << r.reason;
    }
  }
}
