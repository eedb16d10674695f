#include "scale/shard.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "engine/rank_gate.hpp"
#include "opmeter/errors.hpp"
#include "util/file_safe_name.hpp"
#include "util/text.hpp"

namespace opmeter::scale {
namespace {

constexpr long kMaxRanks = std::numeric_limits<int>::max();

// Ranks and sizes are ints: a larger value (4294967298 read as 2) is bad input, not truncated.
std::optional<long> number(const EnvReader& env, const char* name) {
  const char* v = env(name);
  if (!v || !*v) return std::nullopt;
  long out = 0;
  auto [end, ec] = std::from_chars(v, v + std::char_traits<char>::length(v), out);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && *end == '\0' && out > kMaxRanks))
    throw UsageError(
        fmt::format("environment variable {}='{}' is more than {} (the most ranks opmeter takes)", name, v, kMaxRanks));
  if (ec != std::errc() || *end != '\0' || out < 0)
    throw UsageError(fmt::format("environment variable {}='{}' is not a non-negative integer", name, v));
  return out;
}

// A launcher's (rank, size) pair, when both are set.
std::optional<Shard> pair(const EnvReader& env, const char* rank, const char* size, const char* local,
                          const char* source) {
  auto r = number(env, rank), n = number(env, size);
  if (!r || !n) return std::nullopt;
  if (*n < 1 || *r >= *n)
    throw UsageError(fmt::format("environment: {}={} is not a rank of {}={}", rank, *r, size, *n));
  Shard s{static_cast<int>(*r), static_cast<int>(*n), -1, source};
  if (local)
    if (auto l = number(env, local)) s.local_rank = static_cast<int>(*l);
  return s;
}

}  // namespace

EnvReader process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

std::optional<Shard> shard_from_env(const EnvReader& env) {
  // The processes of one launch: an MPI launcher's variables first (under srun with PMI both are
  // set and agree).
  std::optional<Shard> step = pair(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                   "OMPI_COMM_WORLD_RANK/SIZE");
  if (!step) step = pair(env, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_RANK/SIZE");
  if (!step) step = pair(env, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_PROCID/NTASKS");
  // A job array's task: its id counts from SLURM_ARRAY_TASK_MIN (--array=1-8 is as good as 0-7).
  std::optional<Shard> array;
  if (auto id = number(env, "SLURM_ARRAY_TASK_ID"), count = number(env, "SLURM_ARRAY_TASK_COUNT"); id && count) {
    long first = number(env, "SLURM_ARRAY_TASK_MIN").value_or(0);
    long step_of = number(env, "SLURM_ARRAY_TASK_STEP").value_or(1);
    if (*id < first || step_of < 1 || (*id - first) % step_of != 0 || (*id - first) / step_of >= *count)
      throw UsageError(fmt::format("environment: SLURM_ARRAY_TASK_ID={} is not a task of an array of {} from {} by {}",
                                   *id, *count, first, step_of));
    array = Shard{static_cast<int>((*id - first) / step_of), static_cast<int>(*count), -1, "SLURM_ARRAY_TASK_ID/COUNT"};
  }
  if (array && step && step->size > 1) {
    if (static_cast<long long>(array->size) * step->size > kMaxRanks)
      throw UsageError(
          fmt::format("environment: an array of {} tasks ({}) of {} processes each ({}) is more than {} ranks",
                      array->size, array->source, step->size, step->source, kMaxRanks));
    return Shard{array->rank * step->size + step->rank, array->size * step->size, step->local_rank,
                 array->source + " x " + step->source};
  }
  if (array) {
    if (step) array->local_rank = step->local_rank;
    return array;
  }
  return step;
}

std::vector<std::string> half_set_launcher(const EnvReader& env) {
  std::vector<std::string> out;
  auto set = [&](const char* name) { return env(name) && *env(name); };
  // A rank of 0 alone is what a batch script's own step has (SLURM_PROCID=0): one process.
  for (auto [rank, size] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                            {"PMI_RANK", "PMI_SIZE"},
                            {"SLURM_PROCID", "SLURM_NTASKS"}}) {
    if (set(rank) && !set(size) && std::string_view(env(rank)) != "0")
      out.push_back(fmt::format("{}={} is set without {}: this process runs unsharded; give --shard {}/N", rank,
                                env(rank), size, env(rank)));
    if (set(size) && !set(rank) && std::string_view(env(size)) != "1")
      out.push_back(fmt::format("{}={} is set without {}: this process runs unsharded; give --shard I/{}", size,
                                env(size), rank, env(size)));
  }
  if (set("SLURM_ARRAY_TASK_ID") && !set("SLURM_ARRAY_TASK_COUNT"))
    out.push_back(
        fmt::format("SLURM_ARRAY_TASK_ID={} is set without SLURM_ARRAY_TASK_COUNT (a Slurm older than "
                    "17.02?): every task of the array runs unsharded; give --shard TASK/TASKS",
                    env("SLURM_ARRAY_TASK_ID")));
  return out;
}

std::string device_for_local_rank(const std::string& device, int local_rank) {
  const auto colon = device.find(':');
  if (local_rank < 0 || colon == std::string::npos) return device;
  return device.substr(0, colon) + ":" + std::to_string(local_rank);
}

Shard parse_shard(const std::string& text, const EnvReader& env) {
  if (text == "auto") {
    if (auto s = shard_from_env(env)) return *s;
    return Shard{0, 1, -1, "--shard auto (no launcher in the environment: one rank)"};
  }
  auto slash = text.find('/');
  auto whole = [&](std::string_view part, int& out) {
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && ec == std::errc() && end == part.data() + part.size();
  };
  int i = -1, n = 0;
  if (slash == std::string::npos || !whole(std::string_view(text).substr(0, slash), i) ||
      !whole(std::string_view(text).substr(slash + 1), n) || n < 1 || i < 0 || i >= n)
    throw UsageError(fmt::format("--shard '{}': expected auto or I/N with 0 <= I < N (e.g. 0/4)", text));
  Shard s{i, n, -1, "--shard"};
  if (auto from_env = shard_from_env(env)) s.local_rank = from_env->local_rank;
  return s;
}

std::vector<int> shard_split(const std::vector<Case>& cases, int size, const CostModel& cost,
                             const std::function<bool(const Case&)>& everywhere) {
  struct Item {
    std::size_t index;
    double cost;
    std::string key;
  };
  std::vector<Item> items;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (!everywhere(cases[i])) items.push_back({i, std::max(0.0, cost(cases[i])), case_across_ranks(cases[i])});
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.cost != b.cost ? a.cost > b.cost : a.key < b.key;
  });
  std::vector<double> load(std::max(size, 1), 0.0);
  std::vector<int> to(cases.size(), -1);
  for (auto& it : items) {
    int rank = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());  // first of the least
    load[rank] += it.cost;
    to[it.index] = rank;
  }
  return to;
}

std::string split_hash(const std::vector<Case>& cases, const std::vector<int>& split) {
  std::string text;
  for (std::size_t i = 0; i < cases.size(); ++i) text += fmt::format("{} {}\n", case_across_ranks(cases[i]), split[i]);
  return fmt::format("{:016x}", stable_hash(text));
}

std::vector<Case> shard_cases(const std::vector<Case>& cases, const Shard& shard, const CostModel& cost,
                              const std::function<bool(const Case&)>& everywhere, std::string* split) {
  if (!shard.active() && !split) return cases;
  const auto to = shard_split(cases, shard.size, cost, everywhere);
  if (split) *split = split_hash(cases, to);
  std::vector<Case> out;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (to[i] == shard.rank || to[i] < 0) out.push_back(cases[i]);
  return out;
}

std::string rank_dir_prefix(const Shard& shard) {
  return fmt::format("rank{:03d}-of-{}-", shard.rank, shard.size);
}

std::string rank_dir_name(const Shard& shard, const std::string& host, const std::string& device) {
  auto safe = [](const std::string& s) { return s.empty() ? std::string("unknown") : file_safe_name(s, '-'); };
  return rank_dir_prefix(shard) + safe(host) + "-" + safe(device);
}

}  // namespace opmeter::scale
