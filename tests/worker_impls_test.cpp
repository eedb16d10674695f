// The worker's impls come from the worker's own table (worker/impls.json), embedded at build time:
// registered and listed without starting Python, and where Python or PyTorch is missing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "opmeter/registry.hpp"
#include "tests/cli_helpers.hpp"
#include "worker/worker_impls.hpp"

using namespace opmeter;

namespace {
// Sets an environment variable (or unsets it, for nullptr) until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    if (before) before_ = before;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (before_) setenv(name_, before_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> before_;
};

// The test CLI with the worker's Python pointed at nothing (the child inherits the environment).
Output without_python(const std::string& args) {
  ScopedEnv python("OPMETER_PYTHON", "/nonexistent/python3");
  return cli(args);
}

// The test CLI where no Python is found: OPMETER_PYTHON unset and no python3 on the PATH.
Output no_python_on_the_path(const std::string& args) {
  ScopedEnv python("OPMETER_PYTHON", nullptr);
  ScopedEnv path("PATH", "/nonexistent/bin");
  return cli(args);
}
}  // namespace

TEST(WorkerImpls, TheBuiltInTableIsTheWorkersFile) {
  std::ifstream f(std::string(opmeter_source_dir()) + "/worker/impls.json");
  ASSERT_TRUE(f);
  EXPECT_EQ(nlohmann::json::parse(f), worker::impl_table()) << "worker/impls.json changed: rebuild (cmake re-embeds it)";
}

TEST(WorkerImpls, EveryDeclaredImplIsRegisteredWithItsDtypes) {
  const auto& table = worker::impl_table();
  auto& reg = Registry::global();
  std::size_t checked = 0;
  for (const auto& entry : table["impls"])
    for (const auto& [op, dtype_set] : table["op_sets"][entry["ops"].get<std::string>()].items()) {
      const OpDef* def = reg.op(op);
      ASSERT_TRUE(def && def->spec) << op << ": declared by the worker, unknown to opmeter or without a spec";
      const ImplDef* impl = reg.impl(op, entry["impl"].get<std::string>());
      ASSERT_TRUE(impl) << op << "/" << entry["impl"];
      std::vector<std::string> dtypes;
      for (auto d : impl->dtypes) dtypes.emplace_back(to_string(d));
      EXPECT_EQ(dtypes, table["dtype_sets"][dtype_set.get<std::string>()].get<std::vector<std::string>>()) << op;
      EXPECT_TRUE(impl->on_request);
      ++checked;
    }
  EXPECT_GT(checked, 100u);
  // The drift the C++ copy had: the worker runs fp64 GEMM.
  const auto& gemm_dtypes = reg.impl("gemm", "torch")->dtypes;
  EXPECT_NE(std::find(gemm_dtypes.begin(), gemm_dtypes.end(), DType::fp64), gemm_dtypes.end());
  const auto& accepts = reg.impl("linear", "torch")->accepts;
  EXPECT_NE(std::find(accepts.begin(), accepts.end(), "fast_accum"), accepts.end());  // param_sets.training
  EXPECT_TRUE(reg.impl("softmax", "triton")->runs_on("cuda"));
  EXPECT_FALSE(reg.impl("softmax", "triton")->runs_on("cpu"));
}

TEST(WorkerImpls, ATableIsReadAsDeclared) {
  auto table = nlohmann::json::parse(R"({
    "dtype_sets": {"t": ["fp32", "bf16"]},
    "op_sets": {"s": {"relu": "t", "no_such_op": "t"}},
    "param_sets": {"train": ["mode", "phase"]},
    "impls": [{"impl": "w", "ops": "s", "devices": ["cuda"], "summary": "S", "needs": ["quant"], "accepts": "train"}]})");
  auto defs = worker::impl_defs(table, {"relu"});
  ASSERT_EQ(defs.size(), 1u);  // the op opmeter lacks is left out
  EXPECT_EQ(defs[0].op, "relu");
  EXPECT_EQ(defs[0].impl, "w");
  EXPECT_EQ(defs[0].backends, std::vector<std::string>{"cuda"});
  EXPECT_EQ(defs[0].dtypes, (std::vector<DType>{DType::fp32, DType::bf16}));
  EXPECT_EQ(defs[0].needs, std::vector<std::string>{"quant"});
  EXPECT_EQ(defs[0].accepts, (std::vector<std::string>{"mode", "phase"}));  // the named param set
  table["impls"][0]["accepts"] = "nothing_like_it";
  try {
    worker::impl_defs(table, {"relu"});
    ADD_FAILURE() << "an unknown param set was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("worker/impls.json) is malformed"), std::string::npos) << e.what();
  }
  table["impls"][0].erase("accepts");
  EXPECT_TRUE(worker::impl_defs(table, {"relu"})[0].accepts.empty());
  table["dtype_sets"]["t"].push_back("fp33");
  EXPECT_THROW(worker::impl_defs(table, {"relu"}), std::runtime_error);
  table.erase("op_sets");
  EXPECT_THROW(worker::impl_defs(table, {"relu"}), std::runtime_error);
}

TEST(WorkerImpls, AHelloWithAnotherTableGetsANote) {
  EXPECT_EQ(worker::announcement_note({{"hello", "opmeter-worker"}}), "");  // an older worker announces none
  EXPECT_EQ(worker::announcement_note({{"impls", worker::impl_table()}}), "");
  auto changed = worker::impl_table();
  changed["impls"].push_back({{"impl", "new"}, {"ops", "torch_ops"}, {"devices", {"cpu"}}, {"summary", ""}});
  EXPECT_NE(worker::announcement_note({{"impls", changed}}).find("rebuild opmeter"), std::string::npos);
}

TEST(WorkerImpls, ListedAndSkippedWithAReasonWithoutPython) {
  auto list = without_python("list");
  EXPECT_EQ(list.code, 0) << list.text;
  for (auto impl : {"torch_compile_max ", "triton "}) EXPECT_NE(list.text.find(impl), std::string::npos) << impl;
  const auto dir = std::filesystem::temp_directory_path() / "opmeter_worker_impls_no_python";
  std::filesystem::remove_all(dir);  // a run needs a new directory
  const std::string kase =
      "run --case gemm/torch/fp64/M=8,N=8,K=8/threads=1 --samples 2 --no-report --format json --out ";
  auto run = no_python_on_the_path(kase + (dir / "r").string());
  EXPECT_EQ(run.code, 0) << run.text;  // skipped is no failure
  EXPECT_NE(run.text.find("skipped"), std::string::npos) << run.text;
  EXPECT_NE(run.text.find("cannot start python3"), std::string::npos) << run.text;
  // OPMETER_PYTHON names a Python that is not there: a mistake, said before anything is measured.
  auto named = without_python(kase + (dir / "named").string());
  EXPECT_EQ(named.code, 2) << named.text;
  EXPECT_NE(named.text.find("OPMETER_PYTHON=/nonexistent/python3: no such file"), std::string::npos) << named.text;
  // check says it as run does, before it checks anything.
  auto checked = without_python("check --op gemm --impl torch --dtype fp64 --quick -o " + (dir / "check").string());
  EXPECT_EQ(checked.code, 2) << checked.text;
  EXPECT_NE(checked.text.find("OPMETER_PYTHON=/nonexistent/python3: no such file"), std::string::npos) << checked.text;
  EXPECT_FALSE(std::filesystem::exists(dir / "check" / "check.json")) << checked.text;
}
