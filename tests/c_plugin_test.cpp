// C plugins (include/opmeter/plugin_abi.h): the example plugin measured and checked like any impl;
// the test plugins (tests/plugins/bad_plugin.c) wrong in each way, each with a clear message.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "engine/runner.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/plugin_abi.h"
#include "opmeter/registry.hpp"
#include "plugins/c_plugin.hpp"
#include "plugins/op_dtypes.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/quick_options.hpp"

using namespace opmeter;
using opmeter::testing::quick_options;

namespace {

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' is not in:\n" << text;
}


Result run_relu(const std::string& impl, const std::string& dtype = "fp32") {
  return run_case(parse_case("relu/" + impl + "/" + dtype + "/batch=2,seq=3,hidden=40/threads=1"), quick_options());
}

// The message load_plugin throws, or "" when it loads.
std::string load_error(const std::string& path) {
  try {
    load_plugin(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string canonical(const std::string& path) { return fs::weakly_canonical(path).string(); }

}  // namespace

TEST(CPlugin, ExampleRegistersItsImplsOnRequest) {
  load_plugin(EXAMPLE_PLUGIN);
  load_plugin(EXAMPLE_PLUGIN);  // a second time: nothing, not a duplicate impl
  const ImplDef* impl = Registry::global().impl("relu", "c_loop");
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(impl->on_request);
  EXPECT_EQ(impl->backends, std::vector<std::string>{"cpu"});
  EXPECT_EQ(impl->dtypes, (std::vector<DType>{DType::fp32, DType::bf16}));
  EXPECT_TRUE(contains(impl->summary, "(plugin libopmeter_relu_plugin.so)"));
  auto loaded = loaded_plugins();
  EXPECT_EQ(std::count(loaded.begin(), loaded.end(), canonical(EXAMPLE_PLUGIN)), 1);
}

TEST(CPlugin, ExampleRunsAndPassesItsCheck) {
  load_plugin(EXAMPLE_PLUGIN);
  for (const char* dtype : {"fp32", "bf16"}) {
    Result r = run_relu("c_loop", dtype);
    EXPECT_EQ(r.status, Status::ok) << dtype << ": " << r.reason;
    ASSERT_TRUE(r.max_error && r.tolerance) << dtype;
    EXPECT_LE(*r.max_error, *r.tolerance) << dtype;
    EXPECT_EQ(r.samples.size(), 3u) << dtype;
    EXPECT_EQ(r.details["plugin"], canonical(EXAMPLE_PLUGIN));
  }
}

TEST(CPlugin, WrongOutputFailsItsCheck) {
  load_plugin(PLUGIN_BAD_RESULTS);
  Result r = run_relu("test_plugin_wrong");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_TRUE(contains(r.reason, "wrong result before timing"));
  EXPECT_TRUE(r.samples.empty());
}

TEST(CPlugin, UnsupportedCaseIsSkippedWithTheLibrarysReason) {
  load_plugin(PLUGIN_BAD_RESULTS);
  Result r = run_relu("test_plugin_unsupported");
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_TRUE(contains(r.reason, "needs hidden >= 1000000, got 40"));
}

TEST(CPlugin, FailingCallIsAnErrorWithTheLibrarysMessage) {
  load_plugin(PLUGIN_BAD_RESULTS);
  Result r = run_relu("test_plugin_failing");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_TRUE(contains(r.reason, "test_plugin_failing (" + canonical(PLUGIN_BAD_RESULTS) + ") run: the kernel launch failed"));
}

TEST(CPlugin, OtherAbiVersionIsRefusedNamingBoth) {
  EXPECT_TRUE(contains(load_error(PLUGIN_WRONG_ABI),
              fmt::format("plugin {}: built for plugin ABI {}, this opmeter speaks {}", PLUGIN_WRONG_ABI,
                                    OPMETER_PLUGIN_ABI + 1, OPMETER_PLUGIN_ABI)));
  EXPECT_EQ(Registry::global().impl("relu", "test_plugin_other_abi"), nullptr);
}

TEST(CPlugin, BadDescriptionsAreEachNamedAndNoImplOfTheLibraryRegistered) {
  auto error = load_error(PLUGIN_BAD_DESCRIPTIONS);
  EXPECT_TRUE(contains(error, "impl 'test_plugin_unknown_op': unknown op 'relux'; did you mean 'relu'?"));
  EXPECT_TRUE(contains(error, "impl 'My-Relu': 'My-Relu' is not a valid impl name (use lowercase letters, digits and _)"));
  EXPECT_TRUE(contains(error, "impl 'opmeter': op 'relu' already has an impl 'opmeter': pick another name"));
  EXPECT_TRUE(contains(error, "impl 'test_plugin_bad_dtype': unknown dtype 'fp33'"));
  EXPECT_TRUE(contains(error, "impl 'test_plugin_bad_device': unknown device 'gpu'"));
  EXPECT_TRUE(contains(error, "impl 'test_plugin_no_run': gives no run function"));
  // Probe of the plugins, item 1: relu registered as fp64 got fp32 inputs and reported its bytes
  // as 8-byte elements.
  EXPECT_TRUE(contains(error, "impl 'test_plugin_fp64': relu has no fp64 form; its dtypes are fp32, fp16, bf16"));
  EXPECT_EQ(Registry::global().impl("relu", "test_plugin_fine"), nullptr);
  auto loaded = loaded_plugins();
  EXPECT_EQ(std::count(loaded.begin(), loaded.end(), canonical(PLUGIN_BAD_DESCRIPTIONS)), 0);
}

// The dtypes an op has forms of are those its impls have (the worker's and the CUDA impls' too),
// not a list kept apart from them.
TEST(CPlugin, AnOpsDtypesAreThoseOfItsImpls) {
  auto has = [](const std::vector<DType>& ds, DType d) { return std::find(ds.begin(), ds.end(), d) != ds.end(); };
  const auto gemm = op_dtypes("gemm"), relu = op_dtypes("relu");
  EXPECT_TRUE(has(gemm, DType::fp64) && has(gemm, DType::int8) && has(gemm, DType::fp32)) << gemm.size();
  EXPECT_TRUE(has(relu, DType::fp32) && has(relu, DType::bf16));
  EXPECT_FALSE(has(relu, DType::fp64) || has(relu, DType::int8));
  EXPECT_NO_THROW(check_op_dtypes("gemm", {DType::fp64, DType::int8}));
  try {
    check_op_dtypes("relu", {DType::fp32, DType::int8, DType::fp64});
    ADD_FAILURE() << "relu took int8 and fp64";
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "relu has no fp64 or int8 form; its dtypes are fp32, "));
  }
}

TEST(CPlugin, FilesThatAreNoPluginSaySo) {
  EXPECT_EQ(load_error("/nonexistent/libmine.so"), "plugin /nonexistent/libmine.so: no such file");
  auto text = write(temp_dir("plugin_text"), "libtext.so", "not a library\n");
  EXPECT_TRUE(contains(load_error(text.string()), "plugin " + text.string() + ": cannot load it as a shared library: "));
  EXPECT_EQ(load_error(PLUGIN_NO_ENTRY), fmt::format("plugin {}: not an opmeter plugin: it exports no opmeter_plugin_register "
                                                     "(see include/opmeter/plugin_abi.h)",
                                                     PLUGIN_NO_ENTRY));
}

TEST(CPluginCli, RunsAPluginCaseInProcessAndIsolated) {
  const std::string kase = "relu/c_loop/fp32/batch=1,seq=4,hidden=64/threads=1";
  for (const char* isolate : {"", " --isolate"}) {
    auto dir = temp_dir(std::string("plugin_run") + (*isolate ? "_isolated" : ""));
    auto out = cli(fmt::format("run --plugin {} --case {} --samples 3{} --no-report --out {}", EXAMPLE_PLUGIN, kase,
                               isolate, dir.string()));
    ASSERT_EQ(out.code, 0) << out.text;
    auto results = read_jsonl((dir / "results.jsonl").string());
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].status, Status::ok) << isolate << ": " << results[0].reason;
  }
}

// Probe of the plugins, item 6: an exit() in the entry point ended opmeter with exit 0 and
// nothing; a crash there with 139 and no word of the plugin. Both are the plugin's error, exit 2.
TEST(CPluginCli, APluginThatExitsOrCrashesWhileLoadingIsRefusedNamingIt) {
  auto dir = temp_dir("plugin_ends_registering");
  for (auto [plugin, said] : std::vector<std::pair<std::string, std::string>>{
           {PLUGIN_EXITS_REGISTERING, "called exit(3) while registering (in opmeter_plugin_register)"},
           {PLUGIN_CRASHES_REGISTERING,
            "crashed with signal 11 (SIGSEGV) while registering (in opmeter_plugin_register)"},
           {PLUGIN_EXITS_LOADING, "called exit(4) while loading (in its library's constructors)"}}) {
    auto list = cli(fmt::format("list --plugin {}", plugin));
    EXPECT_EQ(list.code, 2) << list.text;
    EXPECT_TRUE(contains(list.text, fmt::format("opmeter: error: plugin {} {}; opmeter cannot use it", plugin, said)));
    auto res = dir / fs::path(plugin).stem();
    auto run =
        cli(fmt::format("run --plugin {} --case relu/opmeter/fp32/batch=1,seq=4,hidden=64/threads=1 --samples 3 "
                        "--no-report --out {}",
                        plugin, res.string()));
    EXPECT_EQ(run.code, 2) << run.text;
    EXPECT_TRUE(contains(run.text, said));
    EXPECT_FALSE(fs::exists(res / "results.jsonl"));
  }
}

// A library's message is a reason and a console line: one line, of a readable length, even
// when it fills the buffer unterminated.
TEST(CPlugin, ALongMessageIsCutShortOnOneLine) {
  load_plugin(PLUGIN_BAD_RESULTS);
  Result r = run_relu("test_plugin_long_message");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_TRUE(contains(r.reason, "run: xxxxxxxx"));
  EXPECT_TRUE(contains(r.reason, "... (724 more characters)"));
  EXPECT_EQ(r.reason.find('\n'), std::string::npos) << r.reason;
  EXPECT_LT(r.reason.size(), 300u + 200u + canonical(PLUGIN_BAD_RESULTS).size());
}

TEST(CPluginCli, MissingPluginExitsTwoWithTheMessage) {
  auto out = cli("run --plugin missing.so --case relu/c_loop/fp32/batch=1,seq=4,hidden=64/threads=1");
  EXPECT_EQ(out.code, 2);
  EXPECT_TRUE(contains(out.text, "opmeter: error: plugin missing.so: no such file"));
}

TEST(CPluginCli, ConfigLoadsPluginsBesideIt) {
  auto dir = temp_dir("plugin_config");
  fs::copy_file(EXAMPLE_PLUGIN, dir / "libmine.so");
  auto config = write(dir, "mine.yaml",
                      "ops: [relu]\nimpls: [c_loop]\nplugins: [libmine.so]\nbatch: [1]\nseq: [4]\nhidden: [64]\n");
  // A dry run loads no plugin (issue 27, item 2): it names the library, found beside the config.
  auto out = cli("run --dry-run --threads 1 " + config.string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_FALSE(contains(out.text, "relu/c_loop/fp32/batch=1,seq=4,hidden=64/threads=1"));
  EXPECT_TRUE(contains(out.text, "plugins " + (dir / "libmine.so").string() + " not loaded"));
  // A run loads it and measures its impl.
  auto profile = write(dir, "calibration.json",
                       R"({"schema": "opmeter-calibration/1", "threads": 1, "device": "cpu",
                           "peak_gflops": {"fp32": 50.0}, "bandwidth": {"memory_gbps": 10.0}, "context": {}})");
  out = cli("run --threads 1 --samples 3 --no-report --filter c_loop --calibration " + profile.string() + " --out " +
            (dir / "res").string() + " " + config.string());
  ASSERT_EQ(out.code, 0) << out.text;
  auto results = read_jsonl((dir / "res" / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u) << out.text;
  EXPECT_EQ(results[0].kase.impl, "c_loop");
  EXPECT_EQ(results[0].status, Status::ok) << results[0].reason;

  auto bad = write(dir, "bad.yaml", "ops: [relu]\nplugins: [nope.so]\n");
  out = cli("run --dry-run " + bad.string());
  EXPECT_EQ(out.code, 2);
  EXPECT_TRUE(contains(out.text, bad.string() + ":2:11: plugin " + (dir / "nope.so").string() + ": no such file"));
}

TEST(CPluginCli, ListShowsThePluginsImpls) {
  auto out = cli(fmt::format("list --plugin {}", EXAMPLE_PLUGIN));
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(contains(out.text, "c_loop            [cpu] example plugin: a plain C loop on one thread (plugin libopmeter_relu_plugin.so) (fp32, bf16; runs when named)"));
}

// Issue 27, item 4: in process, a plugin that called exit(0) ended the run with exit 0 and no
// summary, and one that segfaulted or aborted ended it with 139/134 and no word of which case.
TEST(CPluginCli, APluginThatExitsOrCrashesFailsItsCaseNamingThePluginAndTheOthersRun) {
  auto dir = temp_dir("plugin_ends_process");
  auto profile = write(dir, "calibration.json",
                       R"({"schema": "opmeter-calibration/1", "threads": 1, "device": "cpu",
                           "peak_gflops": {"fp32": 50.0}, "bandwidth": {"memory_gbps": 10.0}, "context": {}})");
  const std::string shape = "/fp32/batch=1,seq=4,hidden=64/threads=1";
  auto config = write(dir, "cases.yaml",
                      "cases:\n  - relu/test_plugin_exits" + shape + "\n  - relu/test_plugin_segfaults" + shape +
                          "\n  - relu/test_plugin_aborts" + shape + "\n  - relu/test_plugin_correct" + shape + "\n");
  auto res = dir / "res";
  auto out = cli(fmt::format("run --plugin {} {} --samples 3 --calibration {} --out {}", PLUGIN_ENDS_PROCESS, config.string(),
                             profile.string(), res.string()));
  EXPECT_EQ(out.code, 1) << out.text;
  const std::string plugin = canonical(PLUGIN_ENDS_PROCESS);
  auto results = read_jsonl((res / "results.jsonl").string());
  ASSERT_EQ(results.size(), 4u) << out.text;
  std::map<std::string, Result> by_impl;
  for (auto& r : results) by_impl[r.kase.impl] = r;
  for (auto [impl, why] : {std::pair{"test_plugin_exits", "exited with code 0"}, {"test_plugin_segfaults", "signal 11"},
                           {"test_plugin_aborts", "signal 6"}}) {
    const Result& r = by_impl[impl];
    EXPECT_EQ(r.status, Status::crashed) << impl << ": " << r.reason;
    EXPECT_TRUE(contains(r.reason, why));
    EXPECT_TRUE(contains(r.reason, "plugin " + plugin));
    EXPECT_TRUE(contains(out.text, "relu/" + std::string(impl) + shape));  // the console names the case
  }
  EXPECT_EQ(by_impl["test_plugin_correct"].status, Status::ok) << by_impl["test_plugin_correct"].reason;
  EXPECT_TRUE(fs::exists(res / "results.json")) << out.text;  // the summaries are written
}

TEST(CPluginCli, WhatAnIsolatedPluginPrintsStaysOutOfOpmetersStandardOutput) {
  auto dir = temp_dir("plugin_stdout");
  const std::string cmd = fmt::format("{} run --plugin {} --case relu/test_plugin_correct/fp32/batch=1,seq=4,hidden=64/threads=1 "
                                      "--samples 3 --no-report --out {} 2>{}",
                                      opmeter_testbin(), PLUGIN_ENDS_PROCESS, (dir / "res").string(), (dir / "stderr.txt").string());
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  ASSERT_EQ(pclose(p), 0) << out << slurp(dir / "stderr.txt");
  EXPECT_FALSE(contains(out, "test plugin chatter")) << out;
  EXPECT_TRUE(contains(out, "| test_plugin_correct |")) << out;  // the table is still there
  EXPECT_TRUE(contains(slurp(dir / "stderr.txt"), "test plugin chatter"));
}
