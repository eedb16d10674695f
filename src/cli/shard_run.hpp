#pragma once
// `opmeter run --shard`: what a sharded run changes in `run` (scale/shard.hpp holds the logic).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/case.hpp"
#include "opmeter/engine.hpp"
#include "scale/shard.hpp"

namespace opmeter {

struct RunArgs;

// The shard of a run or check: `flag`'s (--shard I/N or auto), else the launcher's when it started
// more than one process; nullopt when unsharded.
std::optional<scale::Shard> shard_of(const std::string& flag);
// The shard of this run (an isolated child never shards: it runs the case it is given).
std::optional<scale::Shard> run_shard(const RunArgs& a);

// Where a sharded run writes and what --resume continues. Call before the stored settings are
// read: `--resume ROOT` reads this rank's directory under ROOT (a sibling rank's when this one
// never started: they share the run's settings).
struct ShardOutput {
  std::string root;      // --out or --resume ROOT: every rank's directory is under it
  std::string existing;  // this rank's directory under root when it has one (resuming)
};
ShardOutput prepare_shard_output(RunArgs& a, const scale::Shard& shard);

// This rank's cases of the planned ones (ceilings on every rank); local rank k takes device k of
// the cases' backend unless device_pinned (device_pins_ranks). `model` is a predict model file
// (empty: the work model). The cost of a case is taken as on one thread: a host case's thread
// count defaults to the rank's usable CPUs, and a split that followed it would differ between
// ranks (cases measured twice or never). `split`, when given, is set to the split's hash
// (scale::split_hash), which every rank of the launch shares.
std::vector<Case> cases_of_shard(const std::vector<Case>& cases, const scale::Shard& shard, const Stopping& stopping,
                                 const std::string& model, bool device_pinned, std::string* split = nullptr);

// --shard-model's file as run.json keeps it: "shard_model" (its absolute path: --resume reads it
// again) and "shard_model_hash" (its content: merge refuses ranks that split by other models).
void add_shard_model(nlohmann::json& settings, const std::string& model);

// `--resume DIR` of a sharded run continues the split it began: UsageError when this rank now
// splits the plan otherwise (another model, config or stopping settings) or plans other cases of
// its own than `stored_dir`'s run.json says (when it is this rank's); older run.json files that
// hold no split are taken as they are.
void check_split_as_stored(const std::string& stored_dir, const nlohmann::json& shard_now, const std::string& root);

// `--resume ROOT` where ROOT holds a sharded run's rank directories, by a process that is not
// sharded (a job array's task rerun alone, `sbatch --array=3`, is task 0 of 1): UsageError naming
// the --shard to give.
void refuse_unsharded_resume_of_tree(const std::string& resume);

// Warnings for launcher variables set without their partner (scale::half_set_launcher).
void warn_half_set_launcher();

// Whether --device (run's and check's) holds for every rank of a launch: a device other than its backend's
// first ("cuda:2") does; the first ("cuda:0", what a one-GPU command line names) and none ("") let
// local rank k take device k (device_for_local_rank). The host is every rank's own either way.
bool device_pins_ranks(const std::string& device);

// This rank's results directory: the one it had, or ROOT/rankNNN-of-N-HOST-DEVICE.
std::string shard_results_dir(const ShardOutput& out, const scale::Shard& shard, const std::vector<Case>& cases);

// The shard as run.json and check.json keep it: rank, size, local rank, source, and what merge
// checks: the split's hash (`split`, from cases_of_shard) and the rank's own cases (`mine`),
// whose results a complete rank holds.
nlohmann::json shard_json(const scale::Shard& shard, const std::string& split = "", const std::vector<Case>& mine = {});

// This rank's name on this host for `device` (rank003-of-8-HOST-DEVICE): what a command that
// writes one file or directory gives each rank of a launch instead.
std::string rank_name(const scale::Shard& shard, const std::string& device);

// Seconds a case is expected to take under `stopping`, from its op's work model.
double work_model_cost_s(const Case& c, const Stopping& stopping);

}  // namespace opmeter
