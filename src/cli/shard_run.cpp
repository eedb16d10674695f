#include "cli/shard_run.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "predict/model.hpp"
#include "predict/sample.hpp"
#include "results/run_dir.hpp"
#include "util/dir_walk.hpp"
#include "util/host_name.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace fs = std::filesystem;
namespace {

// Rates that make the work model a time: only ratios between cases matter for the split, so
// modest single-core figures do.
constexpr double kFlopsPerThreadS = 20e9;
constexpr double kBytesPerS = 10e9;

// The directories under root of ranks of `size` (rank003-of-8-...).
std::vector<fs::path> rank_dirs(const std::string& root, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(root, ec))
    if (is_directory_entry(e) && e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void warn_half_set_launcher() {
  for (auto& w : scale::half_set_launcher(scale::process_env())) fmt::print(stderr, "opmeter: warning: {}\n", w);
}

std::optional<scale::Shard> shard_of(const std::string& flag) {
  auto env = scale::process_env();
  if (flag.empty() || flag == "auto") warn_half_set_launcher();
  scale::Shard s = flag.empty() ? scale::shard_from_env(env).value_or(scale::Shard{}) : scale::parse_shard(flag, env);
  if (!s.active()) return std::nullopt;
  return s;
}

std::optional<scale::Shard> run_shard(const RunArgs& a) {
  if (!a.child_result.empty()) return std::nullopt;  // an --isolate child runs the one case it is given
  return shard_of(a.shard);
}

ShardOutput prepare_shard_output(RunArgs& a, const scale::Shard& shard) {
  ShardOutput out;
  if (a.resume.empty()) {
    if (a.out.empty() && !a.dry_run)
      throw UsageError(fmt::format("a sharded run ({} of {}, from {}) needs --out DIR: each rank writes its own "
                                   "directory under it", shard.rank, shard.size, shard.source));
    out.root = a.out;
    return out;
  }
  out.root = a.resume;
  std::error_code ec;
  if (!fs::is_directory(out.root, ec)) throw UsageError(fmt::format("--resume {}: no such results directory", out.root));
  auto mine = rank_dirs(out.root, scale::rank_dir_prefix(shard));
  if (mine.size() > 1)
    throw UsageError(fmt::format("--resume {}: rank {} has {} directories there ({}, ...); keep one", out.root,
                                 shard.rank, mine.size(), mine[0].filename().string()));
  if (!mine.empty()) {
    out.existing = mine[0].string();
    a.resume = out.existing;
    return out;
  }
  auto siblings = rank_dirs(out.root, "rank");
  std::erase_if(siblings, [&](const fs::path& p) {
    return p.filename().string().find(fmt::format("-of-{}-", shard.size)) == std::string::npos;
  });
  if (siblings.empty())
    throw UsageError(fmt::format("--resume {}: no rank directory of a run sharded over {} ranks there{}", out.root,
                                 shard.size, rank_dirs(out.root, "rank").empty() ? "" : " (it was sharded over another number of ranks)"));
  // This rank died before it wrote anything: it starts now, with the settings its siblings stored.
  a.resume = siblings[0].string();
  return out;
}

double work_model_cost_s(const Case& c, const Stopping& stopping) {
  const OpDef* op = Registry::global().op(c.op);
  double call_s = 0;
  if (op && op->work) {
    try {
      Work w = op->work(c);
      call_s = std::max(w.flops / (kFlopsPerThreadS * std::max(1, c.threads)), w.bytes() / kBytesPerS);
    } catch (const std::exception&) {
      call_s = 0;
    }
  }
  double sampling = stopping.fixed_samples > 0 ? stopping.fixed_samples * call_s
                                               : std::max(stopping.min_time_s, stopping.min_samples * call_s);
  return stopping.warmup_s + sampling;
}

std::vector<Case> cases_of_shard(const std::vector<Case>& cases, const scale::Shard& shard, const Stopping& stopping,
                                 const std::string& model_path, bool device_pinned, std::string* split) {
  std::optional<predict::PredictModel> model;
  if (!model_path.empty()) model = predict::read_model(model_path);
  auto cost = [&](const Case& planned) {
    Case c = planned;  // as on one thread: the same on every rank, whatever its CPUs
    if (c.on_host()) c.threads = 1;
    if (model) {
      try {
        double per_call = predict::predict_case(*model, predict::sample_of(c)).time_s;
        return stopping.warmup_s + std::max(stopping.min_time_s, stopping.min_samples * per_call);
      } catch (const UsageError&) {  // a case the model never saw: the work model's estimate
      }
    }
    return work_model_cost_s(c, stopping);
  };
  auto everywhere = [](const Case& c) {  // ceilings (each machine needs its own) and collectives (all ranks together)
    const OpDef* op = Registry::global().op(c.op);
    return ceiling_of(c.op) != CeilingKind::none || (op && op->every_rank);
  };
  std::vector<Case> mine = scale::shard_cases(cases, shard, cost, everywhere, split);
  if (!device_pinned && shard.local_rank >= 0)
    for (auto& c : mine)
      if (!c.on_host()) c.device = scale::device_for_local_rank(c.device, shard.local_rank);
  return mine;
}

bool device_pins_ranks(const std::string& device) {
  return !device.empty() && device != backend_of(device).first_device();
}

std::string shard_results_dir(const ShardOutput& out, const scale::Shard& shard, const std::vector<Case>& cases) {
  if (!out.existing.empty()) return out.existing;
  std::string device = "cpu";
  for (auto& c : cases)
    if (!c.on_host()) device = c.device;
  return (fs::path(out.root) / scale::rank_dir_name(shard, host_name(), device)).string();
}

std::string rank_name(const scale::Shard& shard, const std::string& device) {
  return scale::rank_dir_name(shard, host_name(), device);
}

nlohmann::json shard_json(const scale::Shard& s, const std::string& split, const std::vector<Case>& mine) {
  nlohmann::json j = {{"rank", s.rank}, {"size", s.size}, {"local_rank", s.local_rank}, {"source", s.source}};
  if (!split.empty()) {
    j["split"] = split;
    nlohmann::json cases = nlohmann::json::array();
    for (auto& c : mine) cases.push_back(c.to_string());
    j["cases"] = std::move(cases);
  }
  return j;
}

void add_shard_model(nlohmann::json& settings, const std::string& model) {
  std::error_code ec;
  std::ifstream f(model, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  settings["shard_model"] = fs::absolute(model, ec).lexically_normal().string();
  settings["shard_model_hash"] = fmt::format("{:016x}", stable_hash(text));
}

void check_split_as_stored(const std::string& stored_dir, const nlohmann::json& now, const std::string& root) {
  auto stored = stored_run_settings(stored_dir);
  if (!stored || !stored->contains("shard") || !(*stored)["shard"].is_object()) return;
  const auto& before = (*stored)["shard"];
  const std::string resume = fmt::format("--resume {} --shard {}/{}", root, now.value("rank", 0), now.value("size", 1));
  auto text = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  if (const auto was = text(before, "split"); !was.empty() && was != text(now, "split"))
    throw UsageError(fmt::format(
        "{}: this rank now splits the cases otherwise than the run did (split {} then, {} now: another "
        "--shard-model, config, filter or stopping settings), so some cases would be measured twice and others "
        "never; continue with the run's own settings ({} alone, with the same --shard-model file)",
        stored_dir, was, text(now, "split"), resume));
  if (before.value("rank", -1) != now.value("rank", -2) || !before.contains("cases") || !now.contains("cases")) return;
  if (before["cases"] != now["cases"])
    throw UsageError(
        fmt::format("{}: this rank now plans other cases of its own than the run did ({} then, {} now); "
                    "continue with the run's own settings ({} alone)",
                    stored_dir, before["cases"].size(), now["cases"].size(), resume));
}

void refuse_unsharded_resume_of_tree(const std::string& resume) {
  std::error_code ec;
  if (resume.empty() || !fs::is_directory(resume, ec) || stored_run_settings(resume)) return;
  auto ranks = rank_dirs(resume, "rank");
  for (auto& dir : ranks) {
    auto stored = stored_run_settings(dir.string());
    if (!stored || !stored->contains("shard") || !(*stored)["shard"].is_object()) continue;
    const auto size = (*stored)["shard"].value("size", 0);
    throw UsageError(fmt::format(
        "--resume {}: it holds a run sharded over {} ranks ({}, ...), and this process is not sharded (no --shard, "
        "and no launcher started several); give --shard I/{} for rank I to continue (a job array's task K rerun "
        "alone, sbatch --array=K, is task 0 of 1 to Slurm: give it --shard K/{}), or resume under the same launch",
        resume, size, dir.filename().string(), size, size));
  }
}

}  // namespace opmeter
