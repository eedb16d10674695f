#pragma once
// `opmeter merge`: the results of a sharded run's ranks (or of several runs of one config on
// several machines) joined into one set, each result keeping the machine that measured it.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"
#include "scale/fleet.hpp"

namespace opmeter::scale {

// One rank's (or one machine's) run, as its results directory holds it.
struct RankRun {
  std::string name;      // the directory's name: rank003-of-8-HOST-DEVICE
  std::string dir;
  nlohmann::json run;      // run.json's run settings
  nlohmann::json context;  // run.json's machine context
  std::vector<Result> results;
};

// The results directories in `root` (those holding run.json or results.jsonl, one level down), or
// root itself when it is one. UsageError when there is none.
std::vector<std::string> run_dirs_in(const std::string& root);
// UsageError when the directory holds no readable run.
RankRun load_rank(const std::string& dir);
// UsageError naming the file and key when what merge_conflicts reads (run.shard's size, rank,
// split and cases; context.opmeter's version) has another type. `run_at` and `context_at`: the
// file and the key the run settings and the context came from.
void check_rank_types(const RankRun& r, const std::pair<std::string, std::string>& run_at,
                      const std::pair<std::string, std::string>& context_at);

// Names each run by its directory's name, or, where two runs share it (hostA/results and
// hostB/results), by the shortest tail of its path that tells them apart ("hostA/results"):
// each machine keeps its own name and context.
void name_machines(std::vector<RankRun>& runs);

// Why these runs should not be merged: different configs (run settings, the shard aside) or
// different opmeter versions; a sharded run's ranks that split the plan differently (a split
// hash that differs), a rank missing or given twice, or a rank that lacks some of its planned
// cases (it stopped part-way). Empty when they agree.
std::vector<std::string> merge_conflicts(const std::vector<RankRun>& runs);

// The runs joined. A merged directory given again keeps its machines (its results' machine and
// its context's fleet; prefixed with its own name where another run has a machine of that name).
// A collective (an every-rank op) of a sharded launch is one measurement of all its ranks (the
// slowest rank's time): it is kept once, the lowest rank's result. UsageError when two runs have
// one name (name_machines first).
struct Merged {
  nlohmann::json run;      // the first run's settings, without its shard
  nlohmann::json context;  // the first run's context, plus "fleet": every machine's name, device, shard and context
  std::vector<Result> results;  // each with details[kMachineDetail] = its machine's name
  std::map<std::string, Machine> machines;
};
Merged merge_runs(const std::vector<RankRun>& runs);

}  // namespace opmeter::scale

namespace opmeter {
struct ResultSet;
}
namespace opmeter::scale {

// Whether `path` is a tree of runs (a sharded run's --out): a directory that holds none itself
// but has results directories in it.
bool is_run_tree(const std::string& path);
// A tree's runs merged into one result set (report and compare take a tree as one input).
// UsageError when its runs conflict (merge_conflicts), naming `opmeter merge --force`.
ResultSet load_run_tree(const std::string& path);

// The machines a merged context names (its "fleet"), for fleet_view.
std::map<std::string, Machine> machines_of(const nlohmann::json& merged_context);

}  // namespace opmeter::scale
