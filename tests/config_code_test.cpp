// Commands that only read a config run none of its code (issue 27, item 2): `run --dry-run`,
// `predict MODEL CONFIG` and `predict plan` neither load its C plugins (whose constructors run at
// load) nor import its Python kernels. A marker file shows whether they did.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "predict/model.hpp"
#include "tests/predict_model_fixtures.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {

const std::string kSource = opmeter_source_dir();

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A config beside a plugin and a kernel whose loading writes $OPMETER_TEST_MARKER.
struct CodeConfig {
  fs::path dir, marker, config;
  explicit CodeConfig(const std::string& name) {
    dir = temp_dir(name);
    marker = dir / "marker";
    setenv("OPMETER_TEST_MARKER", marker.c_str(), 1);
    setenv("OPMETER_PYTHON", OPMETER_TEST_PYTHON, 1);
    fs::copy_file(PLUGIN_MARKS_LOAD, dir / "libmarks.so");
    fs::copy_file(kSource + "/tests/data/kernels/marker_kernel.py", dir / "marker_kernel.py");
    config = write(dir, "code.yaml",
                   "plugins: [libmarks.so]\nkernels: [marker_kernel.py:marker]\nops: [gemm]\n"
                   "impls: [reference, test_plugin_marked, marker]\nthreads: 1\n"
                   "shapes: [{name: custom, shapes: [[8, 8, 8], [16, 16, 16]]}]\n");
  }
  ~CodeConfig() {
    unsetenv("OPMETER_TEST_MARKER");
    unsetenv("OPMETER_PYTHON");
  }
};

}  // namespace

TEST(ConfigCode, ADryRunLoadsNoPluginAndImportsNoKernelOfTheConfig) {
  CodeConfig c("config_code_dry");
  auto out = cli("run --dry-run " + c.config.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(fs::exists(c.marker)) << slurp(c.marker);
  EXPECT_TRUE(has(out.text, "gemm/reference/fp32/M=8,N=8,K=8/threads=1")) << out.text;
  EXPECT_TRUE(has(out.text, "libmarks.so")) << out.text;  // the note says what was not loaded
  EXPECT_TRUE(has(out.text, "marker_kernel.py:marker")) << out.text;
  EXPECT_TRUE(has(out.text, "not loaded")) << out.text;

  // A kernel may bring an op of its own, unknown until it is imported: not an error of a dry run.
  auto own_op = write(c.dir, "own_op.yaml", "kernels: [marker_kernel.py:marker]\nops: [an_op_of_its_own]\n");
  out = cli("run --dry-run " + own_op.string());
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "0 cases")) << out.text;
  EXPECT_FALSE(fs::exists(c.marker)) << slurp(c.marker);

  // The marker works: naming the plugin to `list` loads it.
  auto listed = cli("list --plugin " + (c.dir / "libmarks.so").string());
  ASSERT_EQ(listed.code, 0) << listed.text;
  EXPECT_TRUE(has(slurp(c.marker), "plugin loaded"));
}

TEST(ConfigCode, AMissingPluginOrKernelIsStillAnErrorOfTheDryRun) {
  CodeConfig c("config_code_missing");
  auto bad = write(c.dir, "bad.yaml", "ops: [add]\nkernels: [gone.py:k]\n");
  auto out = cli("run --dry-run " + bad.string());
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_TRUE(has(out.text, "bad.yaml:2")) << out.text;
  EXPECT_TRUE(has(out.text, "gone.py")) << out.text;
  auto unknown = write(c.dir, "unknown.yaml", "ops: [gemm]\nimpls: [nosuchimpl]\n");  // no plugin could bring it
  out = cli("run --dry-run " + unknown.string());
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_TRUE(has(out.text, "unknown impl 'nosuchimpl'")) << out.text;
}

TEST(ConfigCode, PredictAndPlanLoadNoPluginAndImportNoKernelOfTheConfig) {
  CodeConfig c("config_code_predict");
  namespace fx = opmeter::predict::fixtures;
  auto model = c.dir / "model.json";
  std::ofstream(model) << predict::to_json(predict::fit_model(fx::gemm_samples(12), fx::ceilings_map(), {}, predict::FitSettings{}))
                              .dump();
  auto out = cli("predict " + model.string() + " " + c.config.string());
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(fs::exists(c.marker)) << slurp(c.marker);
  auto plan = cli("predict plan " + model.string() + " " + c.config.string() + " --budget 5s -o " + (c.dir / "plan.yaml").string());
  EXPECT_EQ(plan.code, 0) << plan.text;
  EXPECT_FALSE(fs::exists(c.marker)) << slurp(c.marker);
}

TEST(ConfigCode, ADryRunOfAResumeLoadsNoCodeTheResultsName) {
  // Results may come from anyone: the code their settings name is loaded to measure, not to look.
  CodeConfig c("config_code_resume");
  const std::string plugin = (c.dir / "libmarks.so").string(), kernel = (c.dir / "marker_kernel.py").string() + ":marker";
  const fs::path run_dir = c.dir / "run", check_dir = c.dir / "check";
  auto out = cli(fmt::format("run --plugin {} --kernel {} --case gemm/reference/fp32/M=8,N=8,K=8/threads=1 --samples 3 "
                             "--no-report --out {}",
                             plugin, kernel, run_dir.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  out = cli(fmt::format("check --plugin {} --kernel {} --op relu --impl test_plugin_marked --dtype fp32 --quick -o {}", plugin,
                        kernel, check_dir.string()));
  ASSERT_EQ(out.code, 0) << out.text;
  ASSERT_TRUE(has(slurp(c.marker), "plugin loaded"));  // the marker works
  fs::remove(c.marker);

  out = cli("run --resume " + run_dir.string() + " --dry-run");
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "a dry run runs no code: not loading")) << out.text;
  EXPECT_TRUE(has(out.text, "gemm/reference/fp32/M=8,N=8,K=8/threads=1")) << out.text;
  out = cli("check --resume " + check_dir.string() + " --dry-run");
  EXPECT_EQ(out.code, 2) << out.text;  // its impls are unknown without their code, and the note says how to list them
  EXPECT_TRUE(has(out.text, "a dry run runs no code: not loading")) << out.text;
  EXPECT_TRUE(has(out.text, "give them with --plugin or --kernel")) << out.text;
  EXPECT_FALSE(fs::exists(c.marker)) << slurp(c.marker);

  // A real resume runs the stored code, and says so by name first, even with nothing left to run.
  out = cli("run --resume " + run_dir.string());
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "resuming runs the code the run used, stored in " + run_dir.string() + ": " + plugin))
      << out.text;
  EXPECT_TRUE(has(out.text, kernel)) << out.text;
  EXPECT_TRUE(has(slurp(c.marker), "plugin loaded"));
}

TEST(ConfigCode, ADryRunListsNoCasesForAnOpWhoseListedImplsMayBeUnloadedCode) {
  // `impls: [marker]` names only the kernel's impl: the run measures the kernel's cases alone, so a
  // dry run (which imports no kernel) must not list add's own impls as if the list left add alone.
  CodeConfig c("config_code_kernel_impls");
  auto only = write(c.dir, "only.yaml", "kernels: [marker_kernel.py:marker]\nops: [add]\nimpls: [marker]\n");
  auto out = cli("run --dry-run " + only.string());
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(has(out.text, "add/opmeter/")) << out.text;
  EXPECT_TRUE(has(out.text, "add: left out, as its impls may be marker")) << out.text;
  EXPECT_FALSE(fs::exists(c.marker)) << slurp(c.marker);
}

// A plugin named on the command line is the user's own code, and its impls' cases are the plan:
// a dry run loads it (its constructor runs), and --help says so.
TEST(ConfigCode, ADryRunLoadsAPluginNamedOnTheCommandLine) {
  CodeConfig c("config_code_plugin_flag");
  const std::string plugin = (c.dir / "libmarks.so").string();
  auto out = cli(fmt::format(
      "run --plugin {} --case relu/test_plugin_marked/fp32/batch=1,seq=4,hidden=8/threads=1 --dry-run", plugin));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "relu/test_plugin_marked/fp32/batch=1,seq=4,hidden=8/threads=1")) << out.text;
  EXPECT_TRUE(has(slurp(c.marker), "plugin loaded"));
  for (const char* command : {"run", "check"}) {
    auto help = cli(std::string(command) + " --help");
    EXPECT_TRUE(has(help.text, "Loaded (its constructors run) with --dry-run too")) << help.text;
  }
}

TEST(ConfigCode, AConfigAfterKernelIsTheConfigNotASecondKernel) {
  CodeConfig c("config_code_kernel_then_config");
  auto plain = write(c.dir, "plain.yaml", "ops: [gemm]\nimpls: [reference]\nthreads: 1\nshapes: [{name: custom, shapes: [[8, 8, 8]]}]\n");
  auto out = cli(fmt::format("run --kernel {}:marker {} --dry-run", (c.dir / "marker_kernel.py").string(), plain.string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "gemm/reference/fp32/M=8,N=8,K=8/threads=1")) << out.text;
}
