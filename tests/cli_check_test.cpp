// `opmeter check`: the matrix, its exit codes, check.json, wrong impls of every kind (linked in,
// a C plugin, a Python kernel), crashes and hangs under --isolate, bad input, --sanitize.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/shard_run.hpp"
#include "tests/cli_helpers.hpp"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

// The printed matrix: cells by row (op/impl) and column (dtype), read from its header line on.
std::map<std::string, std::map<std::string, std::string>> printed_matrix(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line;
  std::vector<std::pair<std::size_t, std::string>> columns;  // start offset, dtype
  while (std::getline(in, line)) {
    if (line.rfind("op/impl", 0) == 0) {
      std::istringstream words(line);
      std::string w;
      words >> w;
      std::size_t at = 0;
      while (words >> w) columns.emplace_back(at = line.find(" " + w, at) + 1, w);
      continue;
    }
    if (columns.empty()) continue;
    if (line.empty()) break;  // the end of the matrix
    const std::string row = line.substr(0, line.find(' '));
    for (std::size_t i = 0; i < columns.size(); ++i) {
      std::size_t from = columns[i].first, to = i + 1 < columns.size() ? columns[i + 1].first : line.size();
      std::string cell = from < line.size() ? line.substr(from, to - from) : "";
      cell.erase(cell.find_last_not_of(' ') + 1);
      out[row][columns[i].second] = cell;
    }
  }
  return out;
}

}  // namespace

TEST(CheckCli, PassingImplsExitZeroAndWriteEveryCase) {
  auto dir = temp_dir("check_pass");
  auto out = cli("check --op relu,layernorm --impl opmeter,reference -o " + dir.string());
  EXPECT_EQ(out.code, 0) << out.text;
  auto m = printed_matrix(out.text);
  EXPECT_EQ(m["relu/opmeter"]["fp32"], "pass") << out.text;
  EXPECT_EQ(m["layernorm/reference"]["bf16"], "pass") << out.text;
  auto j = read_json(dir / "check.json");
  EXPECT_EQ(j["schema"], "opmeter-check/1");
  // 2 ops x 2 impls x 2 dtypes x 4 row shapes, each checked against a tolerance it met.
  ASSERT_EQ(j["cases"].size(), 32u);
  for (auto& c : j["cases"]) {
    EXPECT_EQ(c["status"], "pass") << c.dump();
    EXPECT_LE(c["max_error"].get<double>(), c["tolerance"].get<double>()) << c.dump();
  }
  EXPECT_TRUE(j["context"].contains("cpu"));
}

TEST(CheckCli, WrongAndLazyImplsFailNamingThemAndExitOne) {
  auto dir = temp_dir("check_wrong");
  auto out = cli("check --op gemm --impl test_wrong,test_lazy,reference --dtype fp32 -o " + dir.string());
  EXPECT_EQ(out.code, 1) << out.text;
  auto m = printed_matrix(out.text);
  EXPECT_EQ(m["gemm/test_wrong"]["fp32"].rfind("FAIL ", 0), 0u) << out.text;
  EXPECT_EQ(m["gemm/test_lazy"]["fp32"].rfind("FAIL ", 0), 0u) << out.text;
  EXPECT_EQ(m["gemm/reference"]["fp32"], "pass") << out.text;
  // Each failing case is listed with its case string and why.
  EXPECT_TRUE(has(out.text, "FAIL")) << out.text;
  EXPECT_TRUE(has(out.text, "gemm/test_wrong/fp32/M=37,N=41,K=43/threads=")) << out.text;
  EXPECT_TRUE(has(out.text, "still poisoned")) << out.text;  // the lazy impl's unwritten row
}

TEST(CheckCli, IsolatedCrashAndHangAreStatusesAndTheRestStillRuns) {
  auto dir = temp_dir("check_isolate");
  auto out = cli("check --op gemm --impl test_crash,test_hang,reference --dtype fp32 --quick --isolate --case-deadline 3 -o " +
                 dir.string());
  EXPECT_EQ(out.code, 1) << out.text;
  auto m = printed_matrix(out.text);
  EXPECT_EQ(m["gemm/test_crash"]["fp32"], "crash") << out.text;
  EXPECT_EQ(m["gemm/test_hang"]["fp32"], "timeout") << out.text;
  EXPECT_EQ(m["gemm/reference"]["fp32"], "pass") << out.text;
  EXPECT_EQ(read_json(dir / "check.json")["cases"].size(), 3u);  // --quick: the first shape of each
}

TEST(CheckCli, AWrongCPluginFailsNamingIt) {
  auto dir = temp_dir("check_plugin");
  auto out = cli(std::string("check --plugin ") + PLUGIN_BAD_RESULTS + " --op relu --impl test_plugin_wrong,opmeter -o " +
                 dir.string());
  EXPECT_EQ(out.code, 1) << out.text;
  auto m = printed_matrix(out.text);
  EXPECT_EQ(m["relu/test_plugin_wrong"]["fp32"].rfind("FAIL ", 0), 0u) << out.text;
  EXPECT_EQ(m["relu/opmeter"]["fp32"], "pass") << out.text;
  // A plugin's impls are the user's: every shape, not only the first.
  std::size_t plugin_cases = 0;
  const auto j = read_json(dir / "check.json");
  for (auto& c : j["cases"]) plugin_cases += c["impl"] == "test_plugin_wrong";
  EXPECT_EQ(plugin_cases, 4u);
}

TEST(CheckCli, APluginThatExitsOrCrashesIsThatCaseCrashedNamingThePluginAndTheOthersRun) {
  auto dir = temp_dir("check_plugin_ends");
  auto out = cli(std::string("check --quick --plugin ") + PLUGIN_ENDS_PROCESS + " --op relu --dtype fp32 -o " + dir.string());
  EXPECT_EQ(out.code, 1) << out.text;
  auto m = printed_matrix(out.text);
  for (auto impl : {"test_plugin_exits", "test_plugin_segfaults", "test_plugin_aborts"})
    EXPECT_EQ(m[std::string("relu/") + impl]["fp32"], "crash") << impl << "\n" << out.text;
  EXPECT_EQ(m["relu/test_plugin_correct"]["fp32"], "pass") << out.text;
  EXPECT_EQ(m["relu/opmeter"]["fp32"], "pass") << out.text;
  EXPECT_TRUE(has(out.text, "plugin " + fs::canonical(PLUGIN_ENDS_PROCESS).string())) << out.text;
  EXPECT_TRUE(fs::exists(dir / "check.json"));
}

TEST(CheckCli, AWrongPythonKernelFailsNamingIt) {
  const std::string python = OPMETER_TEST_PYTHON;
  if (std::system((python + " -c 'import torch' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << python << " has no PyTorch (scripts/install-deps.sh installs python3-torch)";
  setenv("OPMETER_PYTHON", python.c_str(), 1);
  auto dir = temp_dir("check_kernel");
  auto out = cli(std::string("check --kernel ") + opmeter_source_dir() + "/tests/data/kernels/wrong_add.py:wrong_add --op add " +
                 "--impl wrong_add --dtype fp32 -o " + dir.string());
  unsetenv("OPMETER_PYTHON");
  EXPECT_EQ(out.code, 1) << out.text;
  EXPECT_EQ(printed_matrix(out.text)["add/wrong_add"]["fp32"].rfind("FAIL ", 0), 0u) << out.text;
}

TEST(CheckCli, BadInputExitsTwoSayingWhat) {
  struct Bad {
    std::string args, says;
  };
  for (const Bad& b : {Bad{"--op relux", "unknown op 'relux'"}, Bad{"--impl onednnn", "unknown impl 'onednnn'"},
                       Bad{"--dtype fp33", "unknown dtype 'fp33'"}, Bad{"--device gpu0", "unknown device 'gpu0'"},
                       Bad{"--filter '('", "not a valid regular expression"},
                       Bad{"--op relu --filter nothing-matches", "no case to check"}}) {
    auto out = cli("check " + b.args + " --dry-run");
    EXPECT_EQ(out.code, 2) << b.args << "\n" << out.text;
    EXPECT_TRUE(has(out.text, b.says)) << b.args << "\n" << out.text;
  }
}

TEST(CheckCli, CheckJsonHoldsThePrintedMatrixAndEveryCase) {
  auto dir = temp_dir("check_json");
  // Passing, failing and skipped cases (openblas has no int8 and no bf16), several dtypes.
  auto out = cli("check --op gemm --impl test_wrong,reference,openblas -o " + dir.string());
  EXPECT_EQ(out.code, 1) << out.text;
  auto printed = printed_matrix(out.text);
  auto j = read_json(dir / "check.json");
  ASSERT_FALSE(j["matrix"].empty());
  EXPECT_EQ(printed.size(), j["matrix"].size()) << out.text;
  for (auto& row : j["matrix"])
    for (auto& [dtype, cell] : row["cells"].items())
      EXPECT_EQ(printed[row["row"]][dtype], cell.get<std::string>()) << row.dump() << "\n" << out.text;
  // Each cell from its cases: FAIL if one failed, else pass if one passed, else skip.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> statuses;
  std::map<std::string, int> counted;
  for (auto& c : j["cases"]) {
    statuses[{c["op"].get<std::string>() + "/" + c["impl"].get<std::string>(), c["dtype"]}].push_back(c["status"]);
    ++counted[c["status"]];
    EXPECT_TRUE(has(out.text, c["case"].get<std::string>()) || c["status"] == "pass" || c["status"] == "skipped") << c.dump();
  }
  for (auto& [key, list] : statuses) {
    auto any = [&](const char* s) { return std::find(list.begin(), list.end(), s) != list.end(); };
    const std::string cell = printed[key.first][key.second];
    if (any("fail")) EXPECT_EQ(cell.rfind("FAIL ", 0), 0u) << key.first << " " << key.second;
    else if (any("pass")) EXPECT_EQ(cell, "pass") << key.first << " " << key.second;
    else EXPECT_EQ(cell, "skip") << key.first << " " << key.second;
  }
  EXPECT_EQ(printed["gemm/openblas"]["int8"], "-");  // a dtype openblas does not declare
  EXPECT_EQ(j["counts"]["fail"], counted["fail"]);
  EXPECT_EQ(j["counts"]["pass"], counted["pass"]);
  EXPECT_TRUE(has(out.text, std::to_string(j["cases"].size()) + " cases: ")) << out.text;
}

TEST(CheckCli, QuickRunsTheFirstShapeEachImplTakes) {
  auto out = cli("check --op linear --impl opmeter_quant,opmeter --dtype fp32 --quick --dry-run");
  EXPECT_EQ(out.code, 0) << out.text;
  // opmeter: the op's first shape; opmeter_quant: its first shape with a recipe.
  EXPECT_TRUE(has(out.text, "linear/opmeter/fp32/batch=2,seq=5,hidden=263,out=77,act=none/")) << out.text;
  EXPECT_TRUE(has(out.text, "linear/opmeter_quant/fp32/batch=1,seq=1,hidden=263,out=77,act=none,quant=int8wo/")) << out.text;
  EXPECT_EQ(std::count(out.text.begin(), out.text.end(), '\n'), 2) << out.text;
}

TEST(CheckCli, SanitizePrintsCommandLinesWhoseFiltersMatchCudaCases) {
  auto out = cli("check --sanitize");
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(has(out.text, "compute-sanitizer --tool memcheck")) << out.text;
  EXPECT_TRUE(has(out.text, "compute-sanitizer --tool racecheck")) << out.text;
  if (!has(cli("list").text, "[cuda]")) GTEST_SKIP() << "this opmeter has no CUDA impls to match";
  std::istringstream lines(out.text);
  std::string line;
  int commands = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("compute-sanitizer", 0) != 0) continue;
    ++commands;
    EXPECT_TRUE(has(line, " check --device cuda:0 --filter '")) << line;
    auto from = line.find("--filter '") + 10;
    auto filter = line.substr(from, line.find('\'', from) - from);
    auto plan = cli("check --device cuda:0 --filter '" + filter + "' --dry-run");
    EXPECT_EQ(plan.code, 0) << filter << "\n" << plan.text;  // matches cases (else exit 2)
  }
  EXPECT_GE(commands, 6);
}

// Sharded (--shard, or under mpirun): each rank writes its own check.json, in a directory named as
// run's (rankNNN-of-N-HOST-DEVICE), and merge joins them: the matrix it prints is the file's.
TEST(CheckCli, ShardsWriteACheckJsonEachAndMergeJoinsThem) {
  auto dir = temp_dir("check_shards");
  const std::string select = "check --op gemm --impl test_wrong,reference --dtype fp32,fp64 --quick -o " + dir.string();
  auto all = cli(select + "-all");
  auto r0 = cli(select + " --shard 0/2");
  auto r1 = cli(select + " --shard 1/2");
  EXPECT_EQ(r0.code + r1.code, 1) << r0.text << r1.text;  // test_wrong fails on one of them
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("rank00", 0) == 0) files.push_back(e.path() / "check.json");
  ASSERT_EQ(files.size(), 2u);
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files[0].parent_path().filename().string().rfind("rank000-of-2-", 0), 0u);
  EXPECT_FALSE(fs::exists(dir / "check.json"));  // nothing written where both would race
  std::size_t shared = read_json(files[0])["cases"].size() + read_json(files[1])["cases"].size();
  EXPECT_EQ(read_json(files[0])["settings"]["shard"]["size"], 2);

  // Not inside the tree it reads: a later merge would count the merged cases again.
  auto inside = cli("merge " + dir.string() + " -o " + (dir / "merged").string());
  EXPECT_EQ(inside.code, 2) << inside.text;
  EXPECT_TRUE(has(inside.text, "is inside")) << inside.text;
  EXPECT_FALSE(fs::exists(dir / "merged"));
  const fs::path joined = dir.string() + "-merged";
  fs::remove_all(joined);
  auto merged = cli("merge " + dir.string() + " -o " + joined.string());
  EXPECT_EQ(merged.code, 1) << merged.text;  // a case failed
  auto j = read_json(joined / "check.json");
  EXPECT_EQ(j["cases"].size(), shared);
  EXPECT_EQ(j["cases"].size(), read_json(fs::path(dir.string() + "-all") / "check.json")["cases"].size());
  for (auto& c : j["cases"]) EXPECT_EQ(c["machine"].get<std::string>().rfind("rank00", 0), 0u) << c.dump();
  auto printed = printed_matrix(merged.text);
  ASSERT_EQ(printed.size(), j["matrix"].size()) << merged.text;
  for (auto& row : j["matrix"])
    for (auto& [dtype, cell] : row["cells"].items())
      EXPECT_EQ(printed[row["row"]][dtype], cell.get<std::string>()) << row.dump() << "\n" << merged.text;
  EXPECT_EQ(printed["gemm/test_wrong"]["fp32"].rfind("FAIL ", 0), 0u) << merged.text;
  EXPECT_EQ(printed["gemm/reference"]["fp64"], "pass") << merged.text;
  // The same matrix as one unsharded check's.
  EXPECT_EQ(printed, printed_matrix(all.text)) << all.text;
}

// Under a launcher with several ranks on a host, `check --device cuda:0` gives local rank k GPU k,
// as run does; another GPU named holds for every rank. Planned only (--dry-run): no GPU needed.
TEST(CheckCli, LocalRankKChecksOnGpuKUnderALauncher) {
  using opmeter::device_pins_ranks;
  EXPECT_FALSE(device_pins_ranks(""));
  EXPECT_FALSE(device_pins_ranks("cuda:0"));
  EXPECT_FALSE(device_pins_ranks("cpu"));
  EXPECT_TRUE(device_pins_ranks("cuda:2"));
  if (!has(cli("list").text, "[cuda]")) GTEST_SKIP() << "this opmeter has no CUDA impls to plan";
  auto devices = [](const std::string& device) {
    return devices_as_rank_1_of_2("check --device " + device + " --op collective --impl nccl --dtype fp32 --quick --dry-run",
                                  "collective/nccl/");
  };
  EXPECT_EQ(devices("cuda:0"), (std::set<std::string>{"device=cuda:1"}));
  EXPECT_EQ(devices("cuda:3"), (std::set<std::string>{"device=cuda:3"}));
}
