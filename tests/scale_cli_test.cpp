// Sharded runs end to end (ranks by --shard, one after the other): what run.json keeps of the
// split and of --shard-model, what --resume of a rank continues, and what merge refuses (exit 2).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"

namespace {

std::string sweep(int shapes) {
  const char* all[] = {"[8, 8, 8]",    "[16, 8, 8]",    "[8, 16, 32]",  "[32, 32, 32]",
                       "[16, 48, 16]", "[48, 16, 64]",  "[64, 64, 64]", "[24, 40, 56]",
                       "[64, 8, 128]", "[128, 32, 16]", "[96, 96, 32]", "[40, 128, 72]"};
  std::string list;
  for (int i = 0; i < shapes; ++i) list += std::string(i ? ", " : "") + all[i];
  return "ops: [gemm]\nimpls: [reference]\ndtypes: [fp32]\nthreads: 1\nstopping: {samples: 3, warmup: 1}\n"
         "shapes:\n  - name: custom\n    shapes: [" +
         list + "]\n";
}
const std::string kFlags = " --no-report --format json --energy-window 0";

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

nlohmann::json run_json(const fs::path& dir) { return nlohmann::json::parse(slurp(dir / "run.json")); }

fs::path rank_dir(const fs::path& root, int rank) {
  for (auto& e : fs::directory_iterator(root))
    if (e.path().filename().string().rfind(fmt::format("rank{:03}-of-", rank), 0) == 0) return e.path();
  return root / "none";
}

std::set<std::string> journal_cases(const fs::path& dir) {
  std::set<std::string> out;
  std::ifstream f(dir / "results.jsonl");
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.insert(nlohmann::json::parse(line).at("case").get<std::string>());
  return out;
}

std::set<std::string> planned_cases(const fs::path& dir) {
  std::set<std::string> out;
  const auto j = run_json(dir);  // held: a temporary's member would not outlive the loop's start
  for (auto& c : j["run"]["shard"]["cases"]) out.insert(c.get<std::string>());
  return out;
}

// The rank "died" before its last `n` cases: they leave its journal, and it wrote no results.json.
void forget_last(const fs::path& dir, std::size_t n) {
  std::vector<std::string> lines;
  std::ifstream f(dir / "results.jsonl");
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) lines.push_back(line);
  f.close();
  ASSERT_GT(lines.size(), n);
  std::ofstream out(dir / "results.jsonl");
  for (std::size_t i = 0; i + n < lines.size(); ++i) out << lines[i] << "\n";
  fs::remove(dir / "results.json");
}

}  // namespace

// --shard-model is kept in run.json (path and content hash) with the split: --resume splits by
// the same model (it re-split by the work model and measured another rank's cases), and merge
// refuses ranks whose model differs.
TEST(ScaleCli, ResumeSplitsByTheStoredModelAndMergeRefusesAnotherModel) {
  const auto dir = temp_dir("scale_model");
  const auto cfg = write(dir, "sweep.yaml", sweep(12));
  auto fit_run = cli(fmt::format("run {} --out {}{}", cfg.string(), (dir / "fit").string(), kFlags));
  ASSERT_EQ(fit_run.code, 0) << fit_run.text;
  // A busy machine flags cases contended, and fit leaves those out: the flags go.
  auto results = nlohmann::json::parse(slurp(dir / "fit" / "results.json"));
  for (auto& b : results["benchmarks"])
    if (b.contains("flags") && b["flags"].is_array()) b["flags"] = nlohmann::json::array();
  std::ofstream(dir / "fit" / "results.json") << results.dump();
  const auto profile = write(dir, "calibration.json",
                             R"({"schema": "opmeter-calibration/1", "threads": 1, "device": "cpu", )"
                             R"("peak_gflops": {"fp32": 50.0}, "bandwidth": {"memory_gbps": 10.0}, "context": {}})");
  const auto model = dir / "model.json";
  auto fit = cli(fmt::format("predict fit {} -o {} --no-report --calibration {}", (dir / "fit").string(),
                             model.string(), profile.string()));
  ASSERT_EQ(fit.code, 0) << fit.text;
  const std::string rank1 = fmt::format("run {} --shard 1/2 {}", cfg.string(), kFlags);
  auto by_work = cli(rank1 + " --dry-run"), by_model = cli(rank1 + " --dry-run --shard-model " + model.string());
  ASSERT_NE(by_work.text, by_model.text) << "the model splits as the work model does: the test would prove nothing";

  const auto tree = dir / "tree";
  auto r1 = cli(fmt::format("{} --shard-model {} --out {}", rank1, model.string(), tree.string()));
  ASSERT_EQ(r1.code, 0) << r1.text;
  const auto one = rank_dir(tree, 1);
  auto stored = run_json(one)["run"];
  EXPECT_EQ(stored.value("shard_model", ""), fs::absolute(model).lexically_normal().string());
  EXPECT_EQ(stored.value("shard_model_hash", "").size(), 16u) << stored.dump();
  EXPECT_EQ(stored["shard"].value("split", "").size(), 16u) << stored.dump();
  EXPECT_EQ(planned_cases(one), journal_cases(one));

  forget_last(one, 2);
  auto resumed = cli(fmt::format("run --resume {} --shard 1/2{}", tree.string(), kFlags));
  ASSERT_EQ(resumed.code, 0) << resumed.text;
  EXPECT_EQ(journal_cases(one), planned_cases(one)) << resumed.text;  // its own cases, no other rank's

  // Rank 0 split by another model file (the same path, other content): merge refuses.
  std::ofstream(model, std::ios::app) << "\n";
  auto r0 = cli(fmt::format("run {} --shard 0/2 --shard-model {} --out {}{}", cfg.string(), model.string(),
                            tree.string(), kFlags));
  ASSERT_EQ(r0.code, 0) << r0.text;
  auto merged = cli(fmt::format("merge {} -o {}", tree.string(), (dir / "merged").string()));
  EXPECT_EQ(merged.code, 2) << merged.text;
  EXPECT_TRUE(has(merged.text, "shard_model_hash")) << merged.text;
  EXPECT_FALSE(fs::exists(dir / "merged" / "results.jsonl"));
}

// A job array's task rerun alone (sbatch --array=1) is task 0 of 1: its --resume of the tree is
// refused, naming the --shard to give; given, it continues. A rank that stopped part-way is
// named by merge, with the resume that finishes it; finished, the merge goes through.
TEST(ScaleCli, ResumeOfATreeNeedsItsShardAndMergeNamesARankThatStopped) {
  const auto dir = temp_dir("scale_resume");
  const auto cfg = write(dir, "sweep.yaml", sweep(6));
  const auto tree = dir / "tree";
  auto r0 = cli(fmt::format("run {} --shard 0/2 --out {}{}", cfg.string(), tree.string(), kFlags));
  ASSERT_EQ(r0.code, 0) << r0.text;

  auto unsharded = cli(fmt::format("run --resume {}{}", tree.string(), kFlags));
  EXPECT_EQ(unsharded.code, 2) << unsharded.text;
  EXPECT_TRUE(has(unsharded.text, "holds a run sharded over 2 ranks")) << unsharded.text;
  EXPECT_TRUE(has(unsharded.text, "give --shard I/2")) << unsharded.text;
  for (auto [k, v] : {std::pair{"SLURM_ARRAY_TASK_ID", "1"},
                      {"SLURM_ARRAY_TASK_COUNT", "1"},
                      {"SLURM_ARRAY_TASK_MIN", "1"},
                      {"SLURM_ARRAY_TASK_MAX", "1"}})
    setenv(k, v, 1);
  auto array = cli(fmt::format("run --resume {}{}", tree.string(), kFlags));
  auto array_shard = cli(fmt::format("run --resume {} --shard 1/2{}", tree.string(), kFlags));
  for (auto k : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"})
    unsetenv(k);
  EXPECT_EQ(array.code, 2) << array.text;
  EXPECT_TRUE(has(array.text, "give it --shard K/2")) << array.text;
  ASSERT_EQ(array_shard.code, 0) << array_shard.text;  // the rank that never started, from its sibling's settings
  const auto one = rank_dir(tree, 1);
  EXPECT_EQ(journal_cases(one), planned_cases(one));

  forget_last(one, 1);
  const auto merged = dir / "merged";
  auto refused = cli(fmt::format("merge {} -o {}", tree.string(), merged.string()));
  EXPECT_EQ(refused.code, 2) << refused.text;
  EXPECT_TRUE(has(refused.text, one.filename().string() + " lacks 1 of its ")) << refused.text;
  EXPECT_TRUE(has(refused.text, fmt::format("continue it with opmeter run --resume {} --shard 1/2", tree.string())))
      << refused.text;
  auto finished = cli(fmt::format("run --resume {} --shard 1/2{}", tree.string(), kFlags));
  ASSERT_EQ(finished.code, 0) << finished.text;
  auto ok = cli(fmt::format("merge {} -o {}", tree.string(), merged.string()));
  ASSERT_EQ(ok.code, 0) << ok.text;
  // merge writes a new directory: the one it wrote is not replaced, nor does it say to resume it.
  auto again = cli(fmt::format("merge {} -o {}", tree.string(), merged.string()));
  EXPECT_EQ(again.code, 2) << again.text;
  EXPECT_TRUE(has(again.text, "exists and is not empty; merge writes a new directory")) << again.text;
  EXPECT_FALSE(has(again.text, "--resume")) << again.text;
}

TEST(ScaleCli, AShardModelWithoutAShardIsSaidToBeUnused) {
  const auto dir = temp_dir("scale_model_alone");
  const auto cfg = write(dir, "sweep.yaml", sweep(2));
  auto out = cli(fmt::format("run {} --shard-model {} --dry-run", cfg.string(), (dir / "m.json").string()));
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(
      has(out.text, "warning: --shard-model " + (dir / "m.json").string() + " is not used: this run is not sharded"))
      << out.text;
}
