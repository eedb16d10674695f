// The worker protocol: with a stand-in worker (pure Python, tests/data/workers/fake_worker.py)
// every way a worker can go wrong; with Debian's PyTorch the `torch` impl on the CPU checked
// against the ops' references, and users' Python kernels, in process and through the CLI.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "tests/cli_helpers.hpp"
#include "worker/shared_worker.hpp"
#include "worker/user_kernels.hpp"
#include "tests/quick_options.hpp"
#include "util/private_temp.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

const std::string kPython = OPMETER_TEST_PYTHON;
const std::string kSource = opmeter_source_dir();
const std::string kFakeWorker = kSource + "/tests/data/workers/fake_worker.py";
const std::string kExampleKernels = kSource + "/examples/kernels/my_kernels.py";
const std::string kTestKernels = kSource + "/tests/data/kernels/";

// The worker's environment for one test: interpreter, script and the stand-in's mode; a fresh
// worker before and after.
struct WorkerEnv {
  explicit WorkerEnv(const std::string& script = "", const std::string& mode = "ok", const std::string& python = kPython) {
    setenv("OPMETER_PYTHON", python.c_str(), 1);
    if (!script.empty()) setenv("OPMETER_WORKER", script.c_str(), 1);
    setenv("FAKE_WORKER_MODE", mode.c_str(), 1);
    worker::stop_shared_worker();
  }
  ~WorkerEnv() {
    worker::stop_shared_worker();
    for (const char* v : {"OPMETER_PYTHON", "OPMETER_WORKER", "FAKE_WORKER_MODE", "OPMETER_WORKER_DEADLINE"}) unsetenv(v);
  }
};


Result run(const std::string& kase) { return run_case(parse_case(kase), quick_options()); }

const std::string kRelu = "relu/torch/fp32/batch=1,seq=4,hidden=256/threads=1";

bool has_torch() {
  static const bool yes = std::system((kPython + " -c 'import torch' 2>/dev/null").c_str()) == 0;
  return yes;
}
#define REQUIRE_TORCH() \
  if (!has_torch()) GTEST_SKIP() << kPython << " has no PyTorch (scripts/install-deps.sh installs python3-torch)"

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The UsageError that registering kernel `spec` throws, or "no error".
std::string kernel_error(const std::string& spec) {
  try {
    worker::add_user_kernel(spec);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

// Whether process `pid` has ended (gone, or a zombie its new parent has not reaped yet).
bool ended(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return true;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] == 'Z';
}

}  // namespace

TEST(WorkerProtocol, AStandInWorkerIsMeasuredWithItsOwnTimerAndChecked) {
  WorkerEnv env(kFakeWorker, "ok");
  Result r = run(kRelu);
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_EQ(r.samples.size(), 3u);
  EXPECT_GT(r.summary.median, 0);
  EXPECT_EQ(r.details["fake"], "yes");
  EXPECT_EQ(r.details["timer"], "worker: perf_counter");
  EXPECT_LE(r.max_error, r.tolerance);
}

TEST(WorkerProtocol, HowGpuSamplesWereHeldIsCountedInTheDetails) {
  {
    WorkerEnv env(kFakeWorker, "held");
    Result r = run(kRelu);
    ASSERT_EQ(r.status, Status::ok) << r.reason;
    EXPECT_TRUE(contains(r.details["launch_hold"], "samples held behind torch.cuda._sleep until issued (0 may have run "
                                                   "short), 0 not held"))
        << r.details["launch_hold"];
    EXPECT_FALSE(r.details["launch_hold"].starts_with("0 samples")) << r.details["launch_hold"];
  }
  WorkerEnv env(kFakeWorker, "ok");  // samples that say nothing of a hold (the CPU's): no such detail
  EXPECT_FALSE(run(kRelu).details.contains("launch_hold"));
}

TEST(WorkerProtocol, PeakMemoryIsWhatTheWorkerReportsOrUnknown) {
  {
    WorkerEnv env(kFakeWorker, "memory");
    Result r = run(kRelu);
    ASSERT_EQ(r.status, Status::ok) << r.reason;
    EXPECT_EQ(r.peak_memory_bytes, std::optional<std::size_t>(12345));
  }
  // Without a figure from the worker, opmeter's own host tensors are no measure of the worker's
  // memory: unknown, not the size of the files it sent.
  WorkerEnv env(kFakeWorker, "ok");
  Result r = run(kRelu);
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_FALSE(r.peak_memory_bytes.has_value());
}

TEST(WorkerProtocol, AWrongOutputFailsTheOpsCheck) {
  WorkerEnv env(kFakeWorker, "wrong");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_TRUE(contains(r.reason, "wrong result before timing")) << r.reason;
}

TEST(WorkerProtocol, AnOutputOfTheWrongSizeFailsNamingBothSizes) {
  WorkerEnv env(kFakeWorker, "short");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_TRUE(contains(r.reason, "the worker wrote 2048 bytes of output, expected 4096 (1024 f32 elements)")) << r.reason;
}

TEST(WorkerProtocol, AnUnsupportedCaseIsSkippedWithTheWorkersReason) {
  WorkerEnv env(kFakeWorker, "unsupported");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_EQ(r.reason, "fake: no such device here");
}

TEST(WorkerProtocol, AnErrorReplyIsAnErrorWithItsMessage) {
  WorkerEnv env(kFakeWorker, "error");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_TRUE(contains(r.reason, "fake: setup went wrong")) << r.reason;
}

TEST(WorkerProtocol, AWorkerThatDiesIsCrashedWithItsStderrAndTheNextCaseGetsAFreshOne) {
  WorkerEnv env(kFakeWorker, "crash_on_sample");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::crashed);
  EXPECT_TRUE(contains(r.reason, "exited with code 3")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "fake worker: about to crash")) << r.reason;
  setenv("FAKE_WORKER_MODE", "ok", 1);  // the dead worker is not reused: a new one reads this
  Result next = run(kRelu);
  EXPECT_EQ(next.status, Status::ok) << next.reason;
}

TEST(WorkerProtocol, AWorkerThatHangsIsKilledAtItsDeadline) {
  WorkerEnv env(kFakeWorker, "hang_on_sample");
  setenv("OPMETER_WORKER_DEADLINE", "2", 1);
  auto t0 = std::chrono::steady_clock::now();
  Result r = run(kRelu);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, Status::timeout);
  EXPECT_TRUE(contains(r.reason, "the worker did not send its reply within 2 s and was killed")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "fake worker: stuck")) << r.reason;
  EXPECT_LT(took, 30);
}

// Issue 27 item 13: a Python without PyTorch first on the PATH loses every torch impl; the skip
// reason names that interpreter and points at OPMETER_PYTHON.
TEST(WorkerProtocol, ATorchlessPythonIsNamedInTheSkipReason) {
  auto dir = temp_dir("torchless_" + std::to_string(getpid()));
  write(dir, "torch.py", "raise ImportError(\"No module named 'torch' (test stand-in)\")\n");
  const char* was = std::getenv("PYTHONPATH");
  const std::string saved = was ? was : "";
  setenv("PYTHONPATH", (dir.string() + (saved.empty() ? "" : ":" + saved)).c_str(), 1);
  {
    WorkerEnv env;
    Result r = run(kRelu);
    EXPECT_EQ(r.status, Status::skipped) << r.reason;
    EXPECT_TRUE(contains(r.reason, "torch cannot be imported by /")) << r.reason;
    EXPECT_TRUE(contains(r.reason, "set OPMETER_PYTHON to a Python that has PyTorch")) << r.reason;
  }
  if (was) setenv("PYTHONPATH", saved.c_str(), 1);
  else unsetenv("PYTHONPATH");
}

// The probe of the README, item 13: the example kernel imports torch; a Python without it gets the
// same OPMETER_PYTHON hint as the torch impls' skip, not the import error alone.
TEST(UserKernels, AKernelThatCannotImportTorchSaysToSetOpmeterPython) {
  auto dir = temp_dir("torchless_kernel_" + std::to_string(getpid()));
  write(dir, "torch.py", "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n");
  const char* was = std::getenv("PYTHONPATH");
  const std::string saved = was ? was : "";
  setenv("PYTHONPATH", (dir.string() + (saved.empty() ? "" : ":" + saved)).c_str(), 1);
  std::string message = "no error";
  {
    WorkerEnv env;
    try {
      worker::add_user_kernel(kExampleKernels + ":my_add");
    } catch (const UsageError& e) {
      message = e.what();
    }
  }
  if (was) setenv("PYTHONPATH", saved.c_str(), 1);
  else unsetenv("PYTHONPATH");
  EXPECT_TRUE(contains(message, "No module named 'torch'")) << message;
  EXPECT_TRUE(contains(message, "; set OPMETER_PYTHON to a Python that has PyTorch (the worker runs " + kPython + ")"))
      << message;
}

// Probe of the worker, item 2: a worker that died while a helper it forked held its stdout gave no
// end of file, and was `timeout` after the whole deadline (300 s a call, 1800 s a setup).
TEST(WorkerProtocol, AWorkerThatDiesWhileAForkedHelperHoldsItsStdoutIsCrashedAtOnce) {
  WorkerEnv env(kFakeWorker, "fork_and_crash_on_sample");
  setenv("OPMETER_WORKER_DEADLINE", "60", 1);
  auto t0 = std::chrono::steady_clock::now();
  Result r = run(kRelu);
  EXPECT_LT(seconds_since(t0), 30);
  EXPECT_EQ(r.status, Status::crashed) << r.reason;
  EXPECT_TRUE(contains(r.reason, "the worker was killed by signal 11")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "before sending its reply")) << r.reason;
  // The helper was in the worker's process group: it ends with it.
  const std::string said = "fake worker: helper ";
  auto at = r.reason.find(said);
  ASSERT_NE(at, std::string::npos) << r.reason;
  const pid_t helper = std::stoi(r.reason.substr(at + said.size()));
  for (int i = 0; i < 100 && !ended(helper); ++i) usleep(50000);
  EXPECT_TRUE(ended(helper)) << "the worker's helper " << helper << " outlived it";
}

// Probe of the worker, item 4: a reply nested two million levels deep overflowed opmeter's stack
// (exit 139, the run lost) when its details were copied.
TEST(WorkerProtocol, AReplyNestedTooDeepIsCrashedNotAStackOverflow) {
  WorkerEnv env(kFakeWorker, "deep_reply");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::crashed) << r.reason;
  EXPECT_TRUE(contains(r.reason, "the worker's reply nests deeper than 64 levels")) << r.reason;
  setenv("FAKE_WORKER_MODE", "ok", 1);  // the next case gets a fresh worker
  EXPECT_EQ(run(kRelu).status, Status::ok);
}

// Probe of the worker, item 5: samples of -1e-6, 0 and 1e308 s were `ok`, with a negative median
// and absurd rates. A time the worker reports must be one: in (0, 1e7] s, as the results reader
// asks of stored samples.
TEST(WorkerProtocol, ATimeThatIsNoTimeIsAnErrorNamingIt) {
  for (auto [mode, said] : std::vector<std::pair<std::string, std::string>>{
           {"sample_seconds:-1e-06", "the worker sent seconds=-1e-06 for 'sample': not a time in (0, 1e+07] s"},
           {"sample_seconds:0", "the worker sent seconds=0 for 'sample'"},
           {"sample_seconds:1e308", "the worker sent seconds=1e+308 for 'sample'"},
           {"sample_seconds:99900099900099899949056", "for 'sample': not a time in (0, 1e+07] s"},
           {"sample_seconds:\"fast\"",
            "the worker's reply to 'sample' gives \"seconds\": \"fast\" (a string), not a number"},
           {"sample_seconds:null", "gives \"seconds\": null (null), not a number"},
           {"run_seconds:-1", "the worker sent seconds=-1 for 'run'"}}) {
    WorkerEnv env(kFakeWorker, mode);
    Result r = run(kRelu);
    EXPECT_EQ(r.status, Status::error) << mode << ": " << r.reason;
    EXPECT_TRUE(contains(r.reason, said)) << mode << ": " << r.reason;
    EXPECT_TRUE(r.samples.empty()) << mode;
  }
}

// Probe of the worker, item 5: a field of the wrong type gave the JSON library's text
// ("[json.exception.type_error.302] type must be boolean, but is string").
TEST(WorkerProtocol, RepliesOfTheWrongTypesAreErrorsInOpmetersWords) {
  for (auto [mode, said] : std::vector<std::pair<std::string, std::string>>{
           {R"(setup_reply:{"ok": "yes"})",
            R"(the worker's reply to 'setup' gives "ok": "yes" (a string), not true or false)"},
           {R"(setup_reply:{"ok": false, "unsupported": 5})", R"(gives "unsupported": 5 (a number), not a string)"},
           {R"(setup_reply:{"ok": false, "error": {"x": 1}})", R"(gives "error": {"x":1} (an object), not a string)"},
           {"setup_reply:[1]", "the worker replied to 'setup' with [1], not a JSON object"},
           {R"(setup_reply:{"ok": true, "details": [1, 2]})", R"(gives "details": [1,2], not an object)"},
           {R"(hello:{"python": 3})", R"(the worker's reply to 'hello' gives "python": 3 (a number), not a string)"},
           {R"(hello:{"protocol": "1"})",
            R"(gives protocol "1", not a version number; this opmeter speaks version 1)"}}) {
    WorkerEnv env(kFakeWorker, mode);
    Result r = run(kRelu);
    EXPECT_EQ(r.status, Status::error) << mode << ": " << r.reason;
    EXPECT_TRUE(contains(r.reason, said)) << mode << ": " << r.reason;
    EXPECT_FALSE(contains(r.reason, "json.exception")) << mode << ": " << r.reason;
  }
  WorkerEnv env(kFakeWorker, R"(hello:{"hello": 5})");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_TRUE(contains(r.reason, "is not an opmeter worker")) << r.reason;
}

// Probe of the worker, item 5: a second reply to one request was taken as the next request's,
// and the case failed for a reason that was not its own.
TEST(WorkerProtocol, ASecondReplyToOneRequestIsCrashedNotTakenForTheNext) {
  WorkerEnv env(kFakeWorker, "double_reply");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::crashed) << r.reason;
  EXPECT_TRUE(contains(r.reason, "which no request asked for (one reply per request)")) << r.reason;
}

TEST(WorkerProtocol, AMalformedDeadlineIsAnErrorSayingWhatIsExpected) {
  WorkerEnv env(kFakeWorker, "ok");
  setenv("OPMETER_WORKER_DEADLINE", "soon", 1);
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_EQ(r.reason, "OPMETER_WORKER_DEADLINE=soon must be a number of seconds > 0");
}

TEST(WorkerProtocol, AnotherProtocolVersionIsAnErrorNamingBothVersions) {
  WorkerEnv env(kFakeWorker, "protocol_99");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_TRUE(contains(r.reason, "speaks protocol version 99, this opmeter speaks version 1")) << r.reason;
}

TEST(WorkerProtocol, AProgramThatIsNoWorkerSkipsItsCases) {
  WorkerEnv env(kFakeWorker, "not_a_worker");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_TRUE(contains(r.reason, "is not an opmeter worker: its first line was 'hello, I am a shell script'")) << r.reason;
}

// A worker killed before its hello crashed (a segfault importing a module): its cases say so. One
// that exits is an interpreter that cannot run it: they are skipped, with its stderr.
TEST(WorkerProtocol, AWorkerKilledBeforeItsHelloCrashedOneThatExitsIsSkipped) {
  {
    WorkerEnv env(kFakeWorker, "crash_at_start");
    Result r = run(kRelu);
    EXPECT_EQ(r.status, Status::crashed) << r.reason;
    EXPECT_TRUE(contains(r.reason, "was killed by signal 11")) << r.reason;
    EXPECT_TRUE(contains(r.reason, "before sending its hello")) << r.reason;
    EXPECT_TRUE(contains(r.reason, "fake worker: crashing while importing")) << r.reason;
  }
  WorkerEnv env(kFakeWorker, "exit_at_start");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_TRUE(contains(r.reason, "exited with code 1 before sending its hello")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "ImportError: fake worker: a module is missing")) << r.reason;
}

TEST(WorkerProtocol, NoPythonSkipsTheCasesWithTheReason) {
  WorkerEnv env(kFakeWorker, "ok", "/nonexistent/python3");
  Result r = run(kRelu);
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_TRUE(contains(r.reason, "cannot start /nonexistent/python3")) << r.reason;
}

TEST(WorkerImpls, AreMeasuredOnlyWhenNamed) {
  const ImplDef* torch = Registry::global().impl("layernorm", "torch");
  ASSERT_NE(torch, nullptr);
  EXPECT_TRUE(torch->on_request);
  EXPECT_TRUE(torch->runs_on("cpu"));
  EXPECT_TRUE(torch->runs_on("cuda"));
  const ImplDef* triton = Registry::global().impl("layernorm", "triton");
  ASSERT_NE(triton, nullptr);
  EXPECT_FALSE(triton->runs_on("cpu"));
  EXPECT_EQ(Registry::global().impl("bandwidth", "torch"), nullptr);  // no spec: nothing to feed a worker
}

TEST(TorchImpl, CpuCasesMatchTheOpsReferences) {
  REQUIRE_TORCH();
  WorkerEnv env;
  for (const char* kase : {"layernorm/torch/fp32/batch=2,seq=8,hidden=96/threads=1",
                           "layernorm/torch/bf16/batch=2,seq=8,hidden=96/threads=1",
                           "rmsnorm/torch/fp32/batch=2,seq=8,hidden=96/threads=1",
                           "softmax/torch/bf16/batch=2,seq=8,hidden=96/threads=1",
                           "gelu_tanh/torch/fp32/batch=2,seq=8,hidden=96/threads=1",
                           "cross_entropy/torch/fp32/batch=2,seq=8,hidden=96/threads=1",
                           "add/torch/bf16/batch=2,seq=8,hidden=96/threads=1",
                           "gemm/torch/fp32/M=48,N=40,K=56/threads=1",
                           "batchnorm/torch/fp32/batch=2,seq=8,hidden=64/threads=1",
                           "mse/torch/fp32/batch=2,seq=8,hidden=64/threads=1",
                           "linear/torch/bf16/batch=2,seq=8,hidden=64,out=48,act=gelu/threads=1",
                           "ln_linear_relu/torch/fp32/batch=2,seq=8,hidden=64,out=48/threads=1",
                           "conv2d/torch/fp32/batch=1,channels=8,out_channels=8,image=12,kernel=3,stride=2,padding=1,"
                           "groups=8,bn=1,act=relu/threads=1",
                           "attention/torch/bf16/batch=1,heads=2,seq=32,head_dim=16,causal=1,stage=full/threads=1",
                           "attention/torch/fp32/batch=1,heads=2,seq=32,head_dim=16,causal=0,stage=probs/threads=1",
                           "transformer_block/torch/fp32/batch=2,seq=37,hidden=48,heads=3,mlp=80,act=gelu,causal=1/threads=1",
                           "transformer_block/torch/bf16/batch=1,seq=20,hidden=32,heads=2,mlp=0,act=silu,causal=0/threads=1"}) {
    Result r = run(kase);
    EXPECT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
    EXPECT_LE(r.max_error, r.tolerance) << kase;
    EXPECT_TRUE(r.details.count("torch")) << kase;
  }
}

TEST(TorchImpl, WhatTorchCannotDoHereIsSkippedWithTheReason) {
  REQUIRE_TORCH();
  WorkerEnv env;
  Result triton = run("layernorm/triton/fp32/batch=2,seq=8,hidden=96/device=cuda:0");
  EXPECT_EQ(triton.status, Status::skipped);
  EXPECT_FALSE(triton.reason.empty());
  Result int8 = run("gemm/torch/int8/M=16,N=16,K=16/threads=1");
  EXPECT_EQ(int8.status, Status::skipped);
  EXPECT_FALSE(int8.reason.empty());
}

TEST(UserKernels, AKernelOfAnExistingOpIsCheckedByThatOpsReference) {
  REQUIRE_TORCH();
  WorkerEnv env;
  EXPECT_EQ(worker::add_user_kernel(kExampleKernels + ":my_add"), "my_add");
  Result r = run("add/my_add/fp32/batch=1,seq=16,hidden=256/threads=1");
  EXPECT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_LE(r.max_error, r.tolerance);

  EXPECT_EQ(worker::add_user_kernel(kTestKernels + "wrong_add.py:wrong_add"), "wrong_add");
  Result wrong = run("add/wrong_add/fp32/batch=1,seq=16,hidden=256/threads=1");
  EXPECT_EQ(wrong.status, Status::failed);
}

TEST(UserKernels, AKernelOfItsOwnOpChecksItselfOrIsFlaggedUnchecked) {
  REQUIRE_TORCH();
  WorkerEnv env;
  EXPECT_EQ(worker::add_user_kernel(kExampleKernels + ":add_relu"), "add_relu");
  ASSERT_NE(Registry::global().op("add_relu"), nullptr);
  EXPECT_EQ(Registry::global().op("add_relu")->params, std::vector<std::string>{"n"});
  Result checked = run("add_relu/add_relu/fp32/n=4096/threads=1");
  EXPECT_EQ(checked.status, Status::ok) << checked.reason;
  EXPECT_GT(checked.tolerance, 0);
  EXPECT_LE(checked.max_error, checked.tolerance);
  EXPECT_FALSE(checked.has_flag("unchecked"));

  EXPECT_EQ(worker::add_user_kernel(kTestKernels + "unchecked_kernel.py"), "unchecked_kernel");
  Result unchecked = run("fill_ones/unchecked_kernel/fp32/n=1024/threads=1");
  EXPECT_EQ(unchecked.status, Status::ok) << unchecked.reason;
  EXPECT_TRUE(unchecked.has_flag("unchecked"));
}

TEST(UserKernels, BadKernelsAreUsageErrorsSayingWhatIsWrong) {
  REQUIRE_TORCH();
  WorkerEnv env;
  auto message = [](const std::string& spec) {
    try {
      worker::add_user_kernel(spec);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_TRUE(contains(message(kTestKernels + "missing.py:k"), "does not exist"));
  EXPECT_TRUE(contains(message(kExampleKernels + ":not-a-name"), "must be a Python identifier"));
  EXPECT_TRUE(contains(message(kTestKernels + "no_op_kernel.py:lonely"), "names no op"));
  EXPECT_TRUE(contains(message(kExampleKernels + ":nothing_here"), "defines no kernel 'nothing_here'"));
  EXPECT_TRUE(contains(message(kTestKernels + "wrong_add.py:wrong_add") + message(kTestKernels + "wrong_add.py:wrong_add"),
                       "no error"));  // the same kernel twice is one kernel
  // A kernel's own op goes into case strings: what they could not carry back is refused.
  const std::string odd = kTestKernels + "odd_kernels.py:";
  EXPECT_TRUE(contains(message(odd + "slash_op"), "op 'a/b' must be lower-case letters, digits and _")) << message(odd + "slash_op");
  EXPECT_TRUE(contains(message(odd + "padded_default"), "n=016: write the integer as n=16")) << message(odd + "padded_default");
  EXPECT_TRUE(contains(message(odd + "comma_default"), "parameter mode's default 'a,b' must be")) << message(odd + "comma_default");
  EXPECT_EQ(Registry::global().op("a/b"), nullptr);
}

TEST(UserKernels, OnlyTheKernelSaysItCannotRunACaseAndANanToleranceFails) {
  REQUIRE_TORCH();
  WorkerEnv env;
  const std::string odd = kTestKernels + "odd_kernels.py:";
  const std::string shape = "/fp32/batch=1,seq=4,hidden=64/threads=1";
  worker::add_user_kernel(odd + "buggy_relu");
  Result buggy = run("relu/buggy_relu" + shape);
  EXPECT_EQ(buggy.status, Status::error) << buggy.reason;  // not skipped: its message says "requires"
  EXPECT_TRUE(contains(buggy.reason, "Index put requires")) << buggy.reason;
  worker::add_user_kernel(odd + "cannot_here");
  Result cannot = run("relu/cannot_here" + shape);
  EXPECT_EQ(cannot.status, Status::skipped) << cannot.reason;
  EXPECT_TRUE(contains(cannot.reason, "runs only on a device this machine lacks")) << cannot.reason;
  worker::add_user_kernel(odd + "nan_tolerance");
  Result nan = run("triple/nan_tolerance/fp32/n=64/threads=1");
  EXPECT_NE(nan.status, Status::ok) << nan.reason;
  EXPECT_TRUE(contains(nan.reason, "tolerance must be a finite number")) << nan.reason;
}

// Probe of the worker, items 1, 8 and 12: a kernel of relu declaring fp64 got fp32 inputs timed
// as fp64; a kernel of `peak` was measured unchecked; dtypes = "fp32" read as 'f', 'p', '3', '2'.
TEST(UserKernels, WhatAKernelCannotComputeIsRefusedWhenItIsRegistered) {
  REQUIRE_TORCH();
  WorkerEnv env;
  const std::string odd = kTestKernels + "odd_kernels.py:";
  EXPECT_EQ(kernel_error(odd + "relu_fp64"),
            fmt::format("kernel '{}relu_fp64': relu has no fp64 form; its dtypes are fp32, fp16, bf16", odd));
  EXPECT_EQ(Registry::global().impl("relu", "relu_fp64"), nullptr);
  EXPECT_EQ(
      kernel_error(odd + "claims_peak"),
      fmt::format("kernel '{}claims_peak' computes op 'peak', whose inputs and check only opmeter's own impls know",
                  odd));
  EXPECT_EQ(Registry::global().impl("peak", "claims_peak"), nullptr);
  const std::string strings = kernel_error(odd + "string_dtypes");
  EXPECT_TRUE(contains(strings, "dtypes must be a list of dtype names, e.g. dtypes = [\"fp32\", \"bf16\"], not 'fp32'"))
      << strings;
  EXPECT_FALSE(contains(strings, "unknown dtype 'f'")) << strings;
  // A second kernel of an op a kernel declared is no kernel of an op without a spec.
  EXPECT_EQ(kernel_error(kTestKernels + "unchecked_kernel.py"), "no error");
  EXPECT_EQ(kernel_error(odd + "nan_tolerance"), "no error");
}

// docs/guide/extending.md: a kernel that cannot run a case raises NotImplementedError and the
// case is skipped. Raised in setup (where a kernel learns the case) it was an error.
TEST(UserKernels, NotImplementedErrorInSetupSkipsTheCase) {
  REQUIRE_TORCH();
  WorkerEnv env;
  worker::add_user_kernel(kTestKernels + "odd_kernels.py:cannot_set_up");
  Result r = run("relu/cannot_set_up/fp32/batch=1,seq=4,hidden=64/threads=1");
  EXPECT_EQ(r.status, Status::skipped) << r.reason;
  EXPECT_TRUE(contains(r.reason, "cannot_set_up needs hidden >= 1000000")) << r.reason;
}

// Probe of the worker, item 12: a kernel that read stdin (input(), pdb) waited on opmeter's pipe
// until the deadline. Its stdin is /dev/null: it reads the end at once.
TEST(UserKernels, AKernelThatReadsStdinMeetsItsEndAtOnce) {
  REQUIRE_TORCH();
  WorkerEnv env;
  setenv("OPMETER_WORKER_DEADLINE", "60", 1);
  worker::add_user_kernel(kTestKernels + "odd_kernels.py:reads_stdin");
  auto t0 = std::chrono::steady_clock::now();
  Result r = run("relu/reads_stdin/fp32/batch=1,seq=4,hidden=64/threads=1");
  EXPECT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_LT(seconds_since(t0), 30);
}

TEST(UserKernels, InheritedWorkerVariablesAreReplacedNotObeyed) {
  REQUIRE_TORCH();
  // An opmeter run inside another's kernel inherits its variables: the worker must watch its own
  // parent and leave the other run's folder alone.
  const fs::path victim = fs::temp_directory_path() / fmt::format("opmeter-victim-{}", getpid());
  fs::create_directories(victim);
  std::ofstream(victim / "precious") << "kept";
  setenv("OPMETER_PARENT_PID", "1", 1);
  setenv("OPMETER_PRIVATE_DIR", victim.c_str(), 1);
  {
    WorkerEnv env;
    Result r = run(kRelu);
    EXPECT_EQ(r.status, Status::ok) << r.reason;
  }
  unsetenv("OPMETER_PARENT_PID");
  unsetenv("OPMETER_PRIVATE_DIR");
  EXPECT_TRUE(fs::exists(victim / "precious"));
  fs::remove_all(victim);
}

TEST(WorkerCli, KernelsFromTheCommandLineAndFromAConfig) {
  REQUIRE_TORCH();
  WorkerEnv env;
  auto dir = temp_dir("worker_kernels");
  auto ok = cli("run --kernel " + kExampleKernels + ":my_add --case add/my_add/fp32/batch=1,seq=8,hidden=128/threads=1 " +
                "--samples 3 --out " + (dir / "a").string() + " --no-report");
  EXPECT_EQ(ok.code, 0) << ok.text;
  EXPECT_TRUE(contains(slurp(dir / "a" / "results.jsonl"), "\"status\":\"ok\"")) << slurp(dir / "a" / "results.jsonl");

  auto missing = cli("run --kernel nowhere.py:k --case add/k/fp32/batch=1,seq=8,hidden=128/threads=1");
  EXPECT_EQ(missing.code, 2);
  EXPECT_TRUE(contains(missing.text, "kernel file")) << missing.text;

  // A config names torch and a kernel beside it (its path relative to the config); without
  // `impls`, worker impls stay out.
  fs::copy_file(kExampleKernels, dir / "my_kernels.py");
  auto named = write(dir, "named.yaml", "ops: [add]\nimpls: [torch, my_kernels.py:my_add]\nbatch: [1]\nseq: [8]\nhidden: [64]\n");
  auto plain = write(dir, "plain.yaml", "ops: [add]\nbatch: [1]\nseq: [8]\nhidden: [64]\n");
  auto with = cli("run " + named.string() + " --dry-run");
  EXPECT_EQ(with.code, 0) << with.text;
  EXPECT_TRUE(contains(with.text, "add/torch/fp32/")) << with.text;
  // A dry run imports no kernel of the config (issue 27, item 2): it names it, found beside the
  // config, and leaves its cases out.
  EXPECT_FALSE(contains(with.text, "add/my_add/fp32/")) << with.text;
  EXPECT_TRUE(contains(with.text, (dir / "my_kernels.py").string() + ":my_add not loaded")) << with.text;
  auto without = cli("run " + plain.string() + " --dry-run");
  EXPECT_EQ(without.code, 0) << without.text;
  EXPECT_FALSE(contains(without.text, "/torch/")) << without.text;
  auto bad = write(dir, "bad.yaml", "ops: [add]\nkernels: [gone.py:k]\n");
  auto bad_run = cli("run " + bad.string() + " --dry-run");
  EXPECT_EQ(bad_run.code, 2);
  EXPECT_TRUE(contains(bad_run.text, "bad.yaml:2")) << bad_run.text;
}

// Probe of the worker, item 10: a bad OPMETER_WORKER_DEADLINE was an error in every worker case
// (exit 1), and a misspelt OPMETER_PYTHON skipped every torch case (exit 0). Both stop a run with
// worker cases before it measures; a run without them does not need either.
TEST(WorkerCli, ABadWorkerEnvironmentStopsARunWithWorkerCasesBeforeItMeasures) {
  auto dir = temp_dir("worker_environment");
  const std::string args = "--samples 3 --no-report --out ";
  const std::string torch_case = "run --case relu/torch/fp32/batch=1,seq=4,hidden=64/threads=1 " + args;
  const std::string own_case = "run --case relu/opmeter/fp32/batch=1,seq=4,hidden=64/threads=1 " + args;
  for (auto [python, said] : std::vector<std::pair<std::string, std::string>>{
           {"/nonexistent/python3", "OPMETER_PYTHON=/nonexistent/python3: no such file"},
           {dir.string(), "OPMETER_PYTHON=" + dir.string() + ": is a directory"},
           {"no_such_python_here", "OPMETER_PYTHON=no_such_python_here: not found on the PATH"}}) {
    WorkerEnv env("", "ok", python);
    auto out = cli(torch_case + (dir / "torch").string());
    EXPECT_EQ(out.code, 2) << out.text;
    EXPECT_TRUE(contains(out.text, "opmeter: error: " + said + " (cases such as relu/torch/fp32/")) << out.text;
    EXPECT_TRUE(contains(out.text, "unset it to run python3 from the PATH")) << out.text;
    EXPECT_FALSE(fs::exists(dir / "torch" / "results.jsonl"));
  }
  for (const char* deadline : {"soon", "0", "-5", "inf", "nan"}) {
    WorkerEnv env(kFakeWorker, "ok");
    setenv("OPMETER_WORKER_DEADLINE", deadline, 1);
    auto out = cli(torch_case + (dir / "deadline").string());
    EXPECT_EQ(out.code, 2) << deadline << ": " << out.text;
    EXPECT_TRUE(contains(out.text, fmt::format("OPMETER_WORKER_DEADLINE={} must be a number of seconds > 0", deadline)))
        << out.text;
    EXPECT_FALSE(fs::exists(dir / "deadline" / "results.jsonl"));
    auto own = cli(own_case + (dir / fmt::format("own_{}", deadline)).string());
    EXPECT_EQ(own.code, 0) << own.text;
  }
  WorkerEnv env(kFakeWorker, "ok");
  setenv("OPMETER_WORKER", (dir / "no_worker.py").c_str(), 1);
  auto out = cli(torch_case + (dir / "worker").string());
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_TRUE(contains(out.text, "OPMETER_WORKER=" + (dir / "no_worker.py").string() + ": no such file")) << out.text;
}

TEST(WorkerProtocol, TensorFilesOfProcessesThatNoLongerRunAreRemoved) {
  // A pid above the kernel's maximum (4194304) never runs. A new opmeter process (the CLI) clears
  // such directories of its user when it makes its own.
  fs::path base = fs::path(fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path());
  fs::path stale = base / "opmeter-999999999-AbCdEf";
  fs::create_directories(stale);
  EXPECT_GE(opmeter::remove_stale_private_dirs(base), 1u);
  EXPECT_FALSE(fs::exists(stale));
}

// Issue 27, item 1: the tensor files went to /dev/shm/opmeter-worker-<pid>-<n>/, reused when it
// existed, and written through links: another user could plant `in0 -> victim` there.
TEST(WorkerProtocol, NoTensorFileIsWrittenThroughALinkAtThePredictableOldNames) {
  auto dir = temp_dir("planted_links");
  auto victim = write(dir, "victim", "victim's data");
  fs::path base = fs::path(fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path());
  std::vector<fs::path> planted;
  for (int n = 0; n < 64; ++n) {  // every serial this test process could reach
    auto d = base / ("opmeter-worker-" + std::to_string(getpid()) + "-" + std::to_string(n));
    fs::create_directories(d);
    for (const char* name : {"in0", "check0", "out"}) fs::create_symlink(victim, d / name);
    planted.push_back(d);
  }
  {
    WorkerEnv env(kFakeWorker, "ok");
    Result r = run(kRelu);
    EXPECT_EQ(r.status, Status::ok) << r.reason;
  }
  EXPECT_EQ(slurp(victim), "victim's data");
  for (auto& d : planted) fs::remove_all(d);
}
