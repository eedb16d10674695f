// Op `model`: its tensors, the worker's verdict taken for its check (with a stand-in worker),
// and a real PyTorch ResNet-18 end to end through the CLI on the CPU with Debian's torch.
#include <gtest/gtest.h>

#include <cstdlib>

#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/model/model_spec.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"
#include "worker/shared_worker.hpp"

using namespace opmeter;

namespace {

const std::string kPython = OPMETER_TEST_PYTHON;
const std::string kFakeWorker = std::string(opmeter_source_dir()) + "/tests/data/workers/fake_worker.py";
const std::string kResnet = "model/torch/fp32/name=resnet18,batch=2,image=32,seq=8,kv=0/threads=1";

// The worker's interpreter, script and stand-in mode for one test; a fresh worker before and after.
struct WorkerEnv {
  explicit WorkerEnv(const std::string& script = "", const std::string& mode = "ok") {
    setenv("OPMETER_PYTHON", kPython.c_str(), 1);
    if (!script.empty()) setenv("OPMETER_WORKER", script.c_str(), 1);
    setenv("FAKE_WORKER_MODE", mode.c_str(), 1);
    worker::stop_shared_worker();
  }
  ~WorkerEnv() {
    worker::stop_shared_worker();
    for (const char* v : {"OPMETER_PYTHON", "OPMETER_WORKER", "FAKE_WORKER_MODE"}) unsetenv(v);
  }
};

bool has_torch() {
  static const bool yes = std::system((kPython + " -c 'import torch' 2>/dev/null").c_str()) == 0;
  return yes;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Result run(const std::string& kase) { return run_case(parse_case(kase), opmeter::testing::quick_options()); }

model::ModelSpec bound(const std::string& kase) {
  model::ModelSpec spec;
  spec.bind(parse_case(kase));
  return spec;
}

}  // namespace

TEST(ModelSpec, VisionModelsReadAnImageBatchAndWriteLogits) {
  auto spec = bound("model/torch/bf16/name=resnet50,batch=4,image=64,seq=128,kv=0/threads=1");
  ASSERT_EQ(spec.inputs().size(), 1u);
  EXPECT_EQ(spec.inputs()[0].name, "image");
  EXPECT_EQ(spec.inputs()[0].count, 4u * 3 * 64 * 64);
  EXPECT_EQ(spec.inputs()[0].elem, Elem::bf16);
  EXPECT_EQ(spec.output().name, "logits");
  EXPECT_EQ(spec.output().count, 4u * 1000);
  EXPECT_DOUBLE_EQ(spec.tolerance(), 0.05);
}

TEST(ModelSpec, OptPrefillReadsSeqTokensAndDecodeOneTokenPerSequence) {
  auto prefill = bound("model/torch/fp32/name=opt_66b_prefill,batch=2,image=224,seq=16,kv=0/threads=1");
  EXPECT_EQ(prefill.inputs()[0].count, 2u * 16 * 9216);
  EXPECT_EQ(prefill.output().count, 2u * 16 * 9216);
  auto decode = bound("model/torch/fp16/name=opt_66b_decode,batch=3,image=224,seq=16,kv=512/threads=1");
  EXPECT_EQ(decode.inputs()[0].count, 3u * 9216);
  EXPECT_EQ(decode.output().count, 3u * 9216);
  EXPECT_EQ(decode.output().elem, Elem::f16);
}

// The model's traffic: its weights read once (torchvision's ResNet-18 has 11,689,512
// parameters), its image batch read and its logits written, in fp32.
TEST(ModelSpec, WorkReadsTheWeightsAndTheInputAndWritesTheOutput) {
  const OpDef* op = Registry::global().op("model");
  ASSERT_NE(op, nullptr);
  const Work w = op->work(parse_case("model/torch/fp32/name=resnet18,batch=2,image=32,seq=8,kv=0/threads=1"));
  EXPECT_DOUBLE_EQ(w.bytes_read, 11689512.0 * 4 + 2 * 3 * 32 * 32 * 4);
  EXPECT_DOUBLE_EQ(w.bytes_written, 2 * 1000 * 4);
}

TEST(ModelSpec, AnUnwrittenOrNonFiniteOutputFailsBeforeAnyVerdict) {
  auto spec = bound("model/torch/fp32/name=resnet18,batch=1,image=32,seq=8,kv=0/threads=1");
  HostTensor out(spec.output());
  out.poison();
  Check poisoned = spec.check({}, out, 1);
  EXPECT_FALSE(poisoned.ok);
  EXPECT_TRUE(contains(poisoned.detail, "logits[0]")) << poisoned.detail;
  for (std::size_t i = 0; i < out.desc().count; ++i) store(out.desc().elem, out.data(), i, 0.25);
  EXPECT_TRUE(spec.check({}, out, 1).ok);
}

TEST(ModelWorkerCheck, TheWorkersVerdictDecides) {
  {
    WorkerEnv env(kFakeWorker, "model_ok");
    Result r = run(kResnet);
    ASSERT_EQ(r.status, Status::ok) << r.reason;
    EXPECT_DOUBLE_EQ(r.max_error.value_or(-1), 0.002);
    EXPECT_DOUBLE_EQ(r.tolerance.value_or(-1), 0.01);
  }
  {
    WorkerEnv env(kFakeWorker, "model_wrong");
    Result r = run(kResnet);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_TRUE(contains(r.reason, "checked by the worker: fake: sample 0")) << r.reason;
  }
}

TEST(ModelWorkerCheck, NoVerdictOrANonFiniteOutputFails) {
  {
    WorkerEnv env(kFakeWorker, "model_no_verdict");
    Result r = run(kResnet);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_TRUE(contains(r.reason, "the worker sent no verdict")) << r.reason;
  }
  {
    WorkerEnv env(kFakeWorker, "model_nan");  // a passing verdict does not hide a NaN
    Result r = run(kResnet);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_TRUE(contains(r.reason, "logits[1999]")) << r.reason;
  }
}

TEST(TorchModel, Resnet18RunsEndToEndOnTheCpuThroughTheCli) {
  if (!has_torch()) GTEST_SKIP() << kPython << " has no PyTorch (scripts/install-deps.sh installs python3-torch)";
  WorkerEnv env;
  auto dir = temp_dir("torch_model");
  auto out = cli("run --case " + kResnet + " --samples 3 --out " + dir.string() + " --no-report");
  ASSERT_EQ(out.code, 0) << out.text;
  auto results = slurp(dir / "results.jsonl");
  EXPECT_TRUE(contains(results, "\"status\":\"ok\"")) << results;
  EXPECT_TRUE(contains(results, "\"model\":\"resnet18\"")) << results;
  EXPECT_TRUE(contains(results, "\"tolerance\":0.0001")) << results;  // the worker's, for fp32
}

TEST(TorchModel, AnUnknownModelIsABadCaseNamingTheKnownOnes) {
  auto out = cli("run --case model/torch/fp32/name=alexnet,batch=1,image=32,seq=8,kv=0/threads=1 --dry-run");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_TRUE(contains(out.text, "name='alexnet' is not a built-in pipeline")) << out.text;
}
