#include "scale/merge.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/rank_gate.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "results/result_set.hpp"
#include "results/run_dir.hpp"
#include "util/dir_walk.hpp"

namespace opmeter::scale {
namespace fs = std::filesystem;
namespace {

bool holds_run(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kRunFile, ec) || fs::exists(dir / "results.jsonl", ec);
}

// Run settings that may differ between the ranks of one run.
nlohmann::json comparable(nlohmann::json run) {
  if (run.is_object())
    for (const char* key : {"shard", "device"}) run.erase(key);
  return run;
}

std::string version_of(const nlohmann::json& context) {
  if (!context.contains("opmeter")) return "?";
  auto& o = context["opmeter"];
  return fmt::format("{} ({})", o.value("version", "?"), o.value("git_sha", "?"));
}

}  // namespace

// What merge reads by type (merge_conflicts, version_of) is checked as it is loaded: another type
// is bad input naming the file and the key, not a json type_error.
void check_rank_types(const RankRun& r, const std::pair<std::string, std::string>& run_at,
                      const std::pair<std::string, std::string>& context_at) {
  auto bad = [](const std::pair<std::string, std::string>& at, const std::string& key, const nlohmann::json& v,
                const std::string& expected) {
    throw UsageError(fmt::format("{}: \"{}.{}\" is {}; expected {}", at.first, at.second, key, v.dump(), expected));
  };
  if (r.run.is_object() && r.run.contains("shard")) {
    const auto& shard = r.run["shard"];
    if (!shard.is_object()) bad(run_at, "shard", shard, "an object");
    for (auto [key, lo] : {std::pair{"size", 1}, {"rank", 0}})
      if (auto it = shard.find(key);
          it != shard.end() && !(it->is_number_integer() && *it >= lo && *it <= std::numeric_limits<int>::max()))
        bad(run_at, fmt::format("shard.{}", key), *it, fmt::format("an integer from {}", lo));
    if (auto it = shard.find("split"); it != shard.end() && !it->is_string())
      bad(run_at, "shard.split", *it, "a string");
    if (auto it = shard.find("cases");
        it != shard.end() &&
        !(it->is_array() && std::all_of(it->begin(), it->end(), [](auto& c) { return c.is_string(); })))
      bad(run_at, "shard.cases", *it, "a list of case strings");
  }
  if (r.context.is_object() && r.context.contains("opmeter")) {
    const auto& o = r.context["opmeter"];
    if (!o.is_object()) bad(context_at, "opmeter", o, "an object");
    for (const char* key : {"version", "git_sha"})
      if (auto it = o.find(key); it != o.end() && !it->is_string())
        bad(context_at, fmt::format("opmeter.{}", key), *it, "a string");
  }
}

namespace {

int shard_value(const RankRun& r, const char* key, int fallback) {
  return r.run.contains("shard") ? r.run["shard"].value(key, fallback) : fallback;
}

std::string shard_text(const RankRun& r, const char* key) {
  if (!r.run.contains("shard") || !r.run["shard"].contains(key) || !r.run["shard"][key].is_string()) return "";
  return r.run["shard"][key].get<std::string>();
}

// The planned cases of its own a rank has no result of: it stopped part-way.
std::vector<std::string> missing_cases(const RankRun& r) {
  if (!r.run.contains("shard") || !r.run["shard"].contains("cases")) return {};
  std::set<std::string> done;
  for (auto& x : r.results) done.insert(x.case_string);
  std::vector<std::string> out;
  for (auto& c : r.run["shard"]["cases"]) {
    std::string planned = c.get<std::string>();
    try {  // as results name it (the op's parameter order)
      planned = parse_case(planned).to_string();
    } catch (const std::exception&) {
    }
    if (!done.count(planned)) out.push_back(c.get<std::string>());
  }
  return out;
}

// A merged run (merge's own output): its context names every machine it holds.
bool is_merged(const RankRun& r) {
  return r.context.is_object() && r.context.contains("fleet") && r.context["fleet"].is_array() &&
         !r.context["fleet"].empty();
}

bool every_rank_op(const Result& x) {
  const OpDef* op = Registry::global().op(x.kase.op);
  return op && op->every_rank;
}

std::string main_device(const RankRun& r) {
  for (auto& x : r.results)
    if (!x.kase.on_host()) return x.kase.device;
  return "cpu";
}

}  // namespace

std::vector<std::string> run_dirs_in(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw UsageError(fmt::format("{}: not a directory of results", root));
  if (holds_run(root)) return {root};
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(root, ec))
    if (is_directory_entry(e) && holds_run(e.path())) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  if (out.empty())
    throw UsageError(fmt::format("{}: no results directory in it (none holds {} or results.jsonl)", root, kRunFile));
  return out;
}

RankRun load_rank(const std::string& dir) {
  RankRun r;
  r.dir = dir;
  r.name = fs::path(dir).filename().string();
  if (r.name.empty()) r.name = fs::path(dir).parent_path().filename().string();
  const fs::path run_file = fs::path(dir) / kRunFile;
  std::error_code ec;
  const auto type = fs::status(run_file, ec).type();
  if (type != fs::file_type::not_found && type != fs::file_type::regular)  // a directory opens, its first read throws
    throw UsageError(fmt::format("{}: {}; expected the run settings opmeter run writes", run_file.string(),
                                 ec ? ec.message() : "is not a file (a directory?)"));
  std::ifstream f(run_file);
  if (type == fs::file_type::regular && f) {
    try {
      auto j = nlohmann::json::parse(f);
      if (!j.is_object()) throw UsageError(fmt::format("{}: is {}, not an object", run_file.string(), j.type_name()));
      r.run = j.value("run", nlohmann::json::object());
      r.context = j.value("context", nlohmann::json::object());
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(fmt::format("{}/{}: not JSON ({})", dir, kRunFile, e.what()));
    }
    for (auto [key, value] : {std::pair{"run", &r.run}, {"context", &r.context}})
      if (!value->is_object())
        throw UsageError(fmt::format("{}: \"{}\" is {}; expected an object", run_file.string(), key, value->dump()));
  }
  ResultSet set = load_results(dir);
  std::pair<std::string, std::string> run_at{run_file.string(), "run"}, context_at{run_file.string(), "context"};
  if (r.context.empty() || r.context.is_null()) {
    r.context = set.context;
    context_at = {(fs::path(dir) / "results.json").string(), "context"};  // no run.json: results.json's
  }
  if (r.run.is_null() || r.run.empty()) {
    r.run = r.context.value("run", nlohmann::json::object());
    run_at = {context_at.first, "context.run"};
  }
  check_rank_types(r, run_at, context_at);
  r.results = std::move(set.results);
  return r;
}

std::vector<std::string> merge_conflicts(const std::vector<RankRun>& runs) {
  std::vector<std::string> out;
  if (runs.empty()) return out;
  const auto& first = runs.front();
  for (auto& r : runs) {
    if (comparable(r.run) != comparable(first.run))
      out.push_back(fmt::format("{} ran other settings than {}: {} vs {}", r.name, first.name, comparable(r.run).dump(),
                                comparable(first.run).dump()));
    if (version_of(r.context) != version_of(first.context))
      out.push_back(fmt::format("{} ran opmeter {}, {} ran {}", r.name, version_of(r.context), first.name,
                                version_of(first.context)));
    auto size = [](const RankRun& x) { return shard_value(x, "size", 1); };
    if (size(r) != size(first))
      out.push_back(fmt::format("{} is a rank of {}, {} of {}", r.name, size(r), first.name, size(first)));
  }
  // Ranks that split the plan differently measure some cases twice and others never (another
  // --shard-model, or an opmeter whose split followed each rank's CPUs).
  const RankRun* split_by = nullptr;
  for (auto& r : runs) {
    if (shard_text(r, "split").empty()) continue;
    if (!split_by) split_by = &r;
    else if (shard_text(r, "split") != shard_text(*split_by, "split"))
      out.push_back(
          fmt::format("{} split the cases otherwise than {} (split {} vs {}): some cases were measured "
                      "twice and others never; run every rank with the same config, settings and "
                      "--shard-model",
                      r.name, split_by->name, shard_text(r, "split"), shard_text(*split_by, "split")));
  }
  // A rank that stopped part-way: its missing cases would be silently absent.
  for (auto& r : runs)
    if (auto missing = missing_cases(r); !missing.empty()) {
      const std::size_t planned = r.run["shard"]["cases"].size();
      const std::vector<std::string> named(missing.begin(), missing.begin() + std::min<std::size_t>(missing.size(), 3));
      out.push_back(fmt::format(
          "{} lacks {} of its {} planned cases ({}{}): it stopped part-way; continue it with "
          "opmeter run --resume {} --shard {}/{}",
          r.name, missing.size(), planned, fmt::join(named, ", "), missing.size() > named.size() ? ", ..." : "",
          fs::path(r.dir).lexically_normal().parent_path().string(), shard_value(r, "rank", 0),
          shard_value(r, "size", 1)));
    }
  // The same directory given twice (or through a link) would count as two machines.
  std::map<std::string, std::string> seen;
  for (auto& r : runs) {
    std::error_code ec;
    const auto where = std::filesystem::weakly_canonical(r.dir, ec).string();
    if (auto [it, fresh] = seen.emplace(ec ? r.dir : where, r.dir); !fresh)
      out.push_back(fmt::format("{} is given twice ({} and {})", r.name, it->second, r.dir));
  }
  // A sharded run's ranks: each once, none missing (a missing one is part of the sweep not merged).
  const int ranks = first.run.contains("shard") ? first.run["shard"].value("size", 1) : 1;
  if (ranks > 1 && seen.size() == runs.size()) {
    std::map<int, std::string> by_rank;
    for (auto& r : runs) {
      const int rank = r.run.contains("shard") ? r.run["shard"].value("rank", -1) : -1;
      if (auto [it, fresh] = by_rank.emplace(rank, r.name); !fresh)
        out.push_back(fmt::format("rank {} of {} appears twice: {} and {} (two runs?)", rank, ranks, it->second, r.name));
    }
    // Named one by one up to a few: a size of 2^31 in a hand-edited run.json is no list to build.
    constexpr int kNamed = 5;
    int present = 0, named = 0;
    for (auto& [rank, _] : by_rank) present += rank >= 0 && rank < ranks;
    for (int rank = 0; rank < ranks && named < kNamed; ++rank)
      if (!by_rank.count(rank)) {
        out.push_back(fmt::format("rank {} of {} is missing: its part of the cases is not merged", rank, ranks));
        ++named;
      }
    if (const long long more = static_cast<long long>(ranks) - present - named; more > 0)
      out.push_back(fmt::format("{} more of the {} ranks are missing", more, ranks));
  }
  return out;
}

void name_machines(std::vector<RankRun>& runs) {
  std::vector<std::vector<std::string>> tails;  // each run's path, last component first
  for (auto& r : runs) {
    std::error_code ec;
    auto path = fs::absolute(r.dir, ec).lexically_normal();  // as given: a link keeps its own name
    std::vector<std::string> parts;
    for (auto& part : ec ? fs::path(r.dir) : path)
      if (!part.empty() && part != "/" && part != ".") parts.push_back(part.string());
    std::reverse(parts.begin(), parts.end());
    tails.push_back(parts.empty() ? std::vector<std::string>{r.name} : parts);
  }
  std::vector<std::size_t> depth(runs.size(), 1);
  auto name = [&](std::size_t i) {
    std::string out;
    for (std::size_t d = std::min(depth[i], tails[i].size()); d-- > 0;) out += tails[i][d] + (d ? "/" : "");
    return out;
  };
  for (bool longer = true; longer;) {
    longer = false;
    std::map<std::string, std::vector<std::size_t>> by_name;
    for (std::size_t i = 0; i < runs.size(); ++i) by_name[name(i)].push_back(i);
    for (auto& [_, same] : by_name)
      if (same.size() > 1)
        for (auto i : same)
          if (depth[i] < tails[i].size()) {
            ++depth[i];
            longer = true;
          }
  }
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (depth[i] > 1) runs[i].name = name(i);
}

Merged merge_runs(const std::vector<RankRun>& runs) {
  Merged m;
  if (runs.empty()) return m;
  m.run = comparable(runs.front().run);
  m.context = runs.front().context;
  m.context["run"] = m.run;
  // The machines each run brings: its own name, or a merged run's fleet.
  std::map<std::string, int> runs_naming;
  for (auto& r : runs) {
    if (!is_merged(r)) {
      ++runs_naming[r.name];
      continue;
    }
    std::set<std::string> mine;
    for (auto& f : r.context["fleet"]) mine.insert(f.value("name", ""));
    for (auto& n : mine) ++runs_naming[n];
  }
  nlohmann::json fleet = nlohmann::json::array();
  std::set<std::string> collectives;  // every-rank cases kept, as every rank plans them
  auto add_machine = [&](const std::string& name, const nlohmann::json& entry) {
    if (m.machines.count(name))
      throw UsageError(fmt::format("merge: two runs are named {}: each machine needs its own name", name));
    m.machines[name] = machine_of(entry.value("context", nlohmann::json::object()), entry.value("device", "cpu"), name);
    auto e = entry;
    e["name"] = name;
    fleet.push_back(std::move(e));
  };
  for (auto& r : runs) {
    if (is_merged(r)) {  // merged before: each result keeps its machine
      auto renamed = [&](const std::string& machine) {
        return runs_naming[machine] > 1 ? r.name + "/" + machine : machine;
      };
      for (auto& f : r.context["fleet"]) add_machine(renamed(f.value("name", "")), f);
      for (auto x : r.results) {
        auto it = x.details.find(kMachineDetail);
        x.details[kMachineDetail] = renamed(it == x.details.end() ? r.name : it->second);
        m.results.push_back(std::move(x));
      }
      continue;
    }
    const std::string device = main_device(r);
    add_machine(r.name, {{"name", r.name},
                         {"device", device},
                         {"shard", r.run.value("shard", nlohmann::json())},
                         {"context", r.context}});
    const bool launched = shard_value(r, "size", 1) > 1;
    for (auto x : r.results) {
      // A collective is one measurement of every rank together: once, not once per rank.
      if (launched && every_rank_op(x) && !collectives.insert(case_across_ranks(x.kase)).second) continue;
      x.details[kMachineDetail] = r.name;
      m.results.push_back(std::move(x));
    }
  }
  m.context["fleet"] = fleet;
  return m;
}

}  // namespace opmeter::scale

namespace opmeter::scale {

bool is_run_tree(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec) || holds_run(path)) return false;
  for (auto& e : fs::directory_iterator(path, ec))
    if (is_directory_entry(e) && holds_run(e.path())) return true;
  return false;
}

ResultSet load_run_tree(const std::string& path) {
  std::vector<RankRun> runs;
  for (auto& d : run_dirs_in(path)) runs.push_back(load_rank(d));
  name_machines(runs);
  if (auto conflicts = merge_conflicts(runs); !conflicts.empty())
    throw UsageError(fmt::format("{}: its runs do not belong together: {}; merge them anyway with opmeter merge {} -o DIR --force",
                                 path, conflicts.front(), path));
  Merged m = merge_runs(runs);
  ResultSet set;
  set.source = path;
  set.format = ResultsFormat::results_jsonl;
  set.context = std::move(m.context);
  set.results = std::move(m.results);
  set.notes.push_back(fmt::format("{}: {} runs merged ({} results)", path, runs.size(), set.results.size()));
  return set;
}

std::map<std::string, Machine> machines_of(const nlohmann::json& context) {
  std::map<std::string, Machine> out;
  if (!context.is_object() || !context.contains("fleet") || !context["fleet"].is_array()) return out;
  for (auto& f : context["fleet"]) {
    std::string name = f.value("name", "");
    out[name] = machine_of(f.value("context", nlohmann::json::object()), f.value("device", "cpu"), name);
  }
  return out;
}

}  // namespace opmeter::scale
