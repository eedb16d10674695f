// opmeter's own CUDA kernels for the activations, norms and losses from the CPU side: every op
// lists its `cuda` impl, a case plans and (without a GPU) is skipped with the reason, and the GPU
// benchmark configs (bench/gpu-ml-ops*.yaml) plan every op beside PyTorch on the same shapes.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {

const char* const kOps[] = {"relu",      "relu6",   "leaky_relu", "gelu",    "gelu_tanh", "silu", "sigmoid",
                            "hardswish", "layernorm", "rmsnorm",  "batchnorm", "softmax", "mse",  "cross_entropy"};

// `opmeter list` as op -> impl -> the impl's dtypes line.
std::map<std::string, std::map<std::string, std::string>> listed(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line, op, impl;
  while (std::getline(in, line)) {
    auto indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    auto word = line.substr(indent, line.find(' ', indent) - indent);
    if (indent == 2) op = word, impl.clear();
    else if (indent == 4) impl = word, out[op][impl];
    else if (!impl.empty() && word == "dtypes:") out[op][impl] = line.substr(indent);
  }
  return out;
}

}  // namespace

TEST(CudaOps, ListShowsTheCudaImplOfEveryActivationNormAndLoss) {
  auto out = cli("list");
  ASSERT_EQ(out.code, 0) << out.text;
  auto ops = listed(out.text);
  for (const char* op : kOps) {
    ASSERT_TRUE(ops[op].count("cuda")) << op << " lists no cuda impl:\n" << out.text;
    EXPECT_EQ(ops[op]["cuda"].rfind("dtypes: fp32, fp16, bf16", 0), 0u) << op << ": " << ops[op]["cuda"];
  }
}

TEST(CudaOps, ACaseWithoutAGpuPlansAndIsSkippedWithTheReason) {
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY)) {
    dlclose(driver);
    GTEST_SKIP() << "an NVIDIA driver is installed here: the GPU tests of each op cover cuda:0";
  }
  auto dir = temp_dir("cuda_ops_nogpu");
  auto cfg = write(dir, "g.yaml", "ops: [gelu, layernorm, batchnorm, cross_entropy]\nimpls: [cuda]\ndtypes: [fp16, bf16]\n"
                                  "device: cuda:0\nbatch: [2]\nseq: [3]\nhidden: [37]\nstopping: {samples: 3}\n");
  auto dry = cli("run " + cfg.string() + " --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.text;
  for (const char* op : {"gelu", "layernorm", "batchnorm", "cross_entropy"})
    for (const char* dtype : {"fp16", "bf16"}) {
      auto kase = fmt::format("{}/cuda/{}/batch=2,seq=3,hidden=37/device=cuda:0\n", op, dtype);
      EXPECT_NE(dry.text.find(kase), std::string::npos) << kase << dry.text;
    }

  auto run = cli("run " + cfg.string() + " --no-report --out " + (dir / "r").string());
  EXPECT_EQ(run.code, 0) << run.text;
  auto j = nlohmann::json::parse(std::ifstream(dir / "r" / "results.json"));
  std::set<std::string> ops;
  for (auto& b : j["benchmarks"]) {
    if (b["op"] == "peak" || b["op"] == "bandwidth") continue;  // the ceilings planned beside them
    ops.insert(b["op"].get<std::string>());
    EXPECT_EQ(b["status"], "skipped") << b.dump();
#ifdef OPMETER_HAVE_CUDA
    EXPECT_EQ(b["reason"], "no NVIDIA driver on this machine (libcuda.so.1 not found)") << b.dump();
#else
    EXPECT_NE(b["reason"].get<std::string>().find("built without CUDA"), std::string::npos) << b.dump();
#endif
  }
  EXPECT_EQ(ops, (std::set<std::string>{"gelu", "layernorm", "batchnorm", "cross_entropy"}));
}

TEST(CudaOps, GpuMlOpsConfigPlansEveryOpBesidePyTorchAndTheCopyCeiling) {
  auto plan = load_config_file(std::string(opmeter_source_dir()) + "/bench/gpu-ml-ops.yaml", 2);
  std::set<std::string> cases;
  for (auto& c : plan.cases) {
    EXPECT_EQ(c.device, "cuda:0") << c.to_string();
    cases.insert(c.to_string());
  }
  for (const char* op : kOps)
    for (const char* impl : {"cuda", "torch", "torch_compile"})
      for (const char* dtype : {"bf16", "fp16", "fp32"}) {
        auto kase = fmt::format("{}/{}/{}/batch=32,seq=1024,hidden=4096/device=cuda:0", op, impl, dtype);
        EXPECT_TRUE(cases.count(kase)) << kase;
      }
  EXPECT_TRUE(cases.count("bandwidth/cuda/fp32/kernel=copy,n=268435456/device=cuda:0"));
}

TEST(CudaOps, HiddenSweepConfigsKeepTheTotalSizeFrom8To262144) {
  std::set<std::int64_t> widths;
  for (auto& f : std::filesystem::directory_iterator(std::string(opmeter_source_dir()) + "/bench/gpu-ml-ops-sweep")) {
    auto plan = load_config_file(f.path().string(), 2);
    std::size_t cuda_cases = 0;
    for (auto& c : plan.cases) {
      if (c.op == "bandwidth") continue;
      std::int64_t b = c.get_int("batch"), s = c.get_int("seq"), h = c.get_int("hidden");
      EXPECT_EQ(b * s * h, std::int64_t{1} << 27) << f.path() << ": " << c.to_string();
      widths.insert(h);
      cuda_cases += c.impl == "cuda";
    }
    EXPECT_EQ(cuda_cases, std::size(kOps)) << f.path();
  }
  EXPECT_EQ(*widths.begin(), 8);
  EXPECT_EQ(*widths.rbegin(), 262144);
  EXPECT_GE(widths.size(), 9u);
}
