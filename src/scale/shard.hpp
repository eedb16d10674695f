#pragma once
// Sharded runs: which part of a sweep this process measures when a launcher (mpirun, srun, a
// Slurm job array) starts many of them. Pure logic on environment variables and case lists: no
// MPI library call, so the core builds and runs without MPI.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "opmeter/case.hpp"

namespace opmeter::scale {

struct Shard {
  int rank = 0;         // 0 .. size-1
  int size = 1;
  int local_rank = -1;  // rank among the processes of this host (picks the GPU); -1: unknown
  std::string source;   // where rank and size came from: "--shard", "OMPI_COMM_WORLD_*", ...
  bool active() const { return size > 1; }
};

// Reads an environment variable: nullptr when unset (std::getenv, or a fake in tests).
using EnvReader = std::function<const char*(const char*)>;
EnvReader process_env();

// Rank and size from the launcher's environment: OMPI_COMM_WORLD_RANK/SIZE (OpenMPI's mpirun),
// PMI_RANK/SIZE (MPICH, Intel MPI, srun --mpi=pmi2), SLURM_PROCID/NTASKS (srun), with their local
// ranks; and a Slurm job array, SLURM_ARRAY_TASK_ID/COUNT (offset by SLURM_ARRAY_TASK_MIN). An
// array task that itself runs several tasks shards its part again: rank = task * tasks + procid.
// nullopt when no launcher says anything; UsageError for values that are not ranks.
std::optional<Shard> shard_from_env(const EnvReader& env);

// `--shard i/n` (0 <= i < n) or `--shard auto` (the launcher's; one rank of one without one).
// UsageError naming the expected form.
Shard parse_shard(const std::string& text, const EnvReader& env);

// A launcher's variables set without their partner (SLURM_ARRAY_TASK_ID without
// SLURM_ARRAY_TASK_COUNT, a rank above 0 without the size): each such process would run
// unsharded. One line per pair, saying what to give instead; empty when none is half set.
std::vector<std::string> half_set_launcher(const EnvReader& env);

// What a case is expected to cost, in seconds (only the ratios between cases matter).
using CostModel = std::function<double(const Case&)>;

// The rank each of `cases` goes to (-1: every rank, where `everywhere` holds), as shard_cases
// deals them.
std::vector<int> shard_split(const std::vector<Case>& cases, int size, const CostModel& cost,
                             const std::function<bool(const Case&)>& everywhere);
// A hash of a split (each case, as case_across_ranks, and its rank): equal on every rank that
// split the same plan the same way, whatever its device or CPUs.
std::string split_hash(const std::vector<Case>& cases, const std::vector<int>& split);

// Which of `cases` rank `shard.rank` measures: cases for which `everywhere` holds (the ceilings
// every machine needs) go to every rank; the others are dealt deterministically, largest expected
// cost first, each to the rank with the least cost so far (ties: the lower rank; equal costs: by
// case_across_ranks, engine/rank_gate.hpp), so every rank computes the same split and each case lands on exactly one
// rank. The rank's cases keep their order in `cases`. `split`, when given, gets the split's hash
// (split_hash), stored with the rank's results so that merge can tell ranks that split otherwise.
std::vector<Case> shard_cases(const std::vector<Case>& cases, const Shard& shard, const CostModel& cost,
                              const std::function<bool(const Case&)>& everywhere, std::string* split = nullptr);

// The device a rank's case runs on when the user named none: local rank k takes device k of the
// case's kind ("cuda:0" -> "cuda:k"), one process per GPU; the host ("cpu") and an unknown local
// rank (-1) keep the case's device.
std::string device_for_local_rank(const std::string& device, int local_rank);

// The results directory of a rank under --out: rank003-of-8-HOST-DEVICE (device's ':' as '-'),
// unique per rank, and readable as where a result came from.
std::string rank_dir_name(const Shard& shard, const std::string& host, const std::string& device);
// The prefix every directory of this rank has (rank003-of-8-), whatever host it ran on.
std::string rank_dir_prefix(const Shard& shard);

}  // namespace opmeter::scale
