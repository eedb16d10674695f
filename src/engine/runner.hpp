#pragma once
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/calibration_profile.hpp"
#include "opmeter/engine.hpp"
#include "opmeter/reporter.hpp"
#include "opmeter/result.hpp"

namespace opmeter {

struct RunOptions {
  Stopping stopping;
  std::uint64_t seed = 20261122;
  bool isolate = false;         // each case in a child process under a deadline
  bool check_only = false;      // isolated children run check_case, not run_case (opmeter check)
  std::vector<std::string> kernels;  // users' Python kernels (FILE:NAME) an isolated child registers too
  std::string self_exe;         // the opmeter binary to re-execute (isolation)
  std::vector<std::string> plugins;  // C plugins the re-executed binary loads (isolation)
  double case_deadline_s = 0;   // isolation deadline per case; 0: 2 x timeout + 30 s
  std::optional<CalibrationProfile> calibration;  // a profile whose ceilings results are shown against
  bool profile = false;         // one sample of one call after warm-up, in the profiler's range
  bool memory_profile = false;  // an untimed pass measuring peak memory (a worker's: and a snapshot)
  std::string profile_dir;      // where impls write their profiles (engine/profile_pass.hpp); "": none
  // GPU cases: the burst figure (the result's median) is sampled after the GPU idled for
  // cooldown_s; then calls run back to back until power settles (at most heat_max_s), and the
  // sustained figure and the energy are taken over energy_window_s (0: neither).
  double energy_window_s = 1.0;
  double cooldown_s = 0.5;
  double heat_max_s = 5.0;
};

// How a cold case's samples are made cold: by the backend's timer (a GPU's L2 flush), by
// rotating `copies_needed` input copies (one: the inputs outsize the cache already), or not at
// all (the timer does not flush, as in CUDA graph mode, and the impl cannot rotate the copies its
// inputs need: the case is measured hot).
enum class ColdWay { timer, rotate, none };
ColdWay cold_way(bool timer_makes_cold, bool impl_rotates, std::size_t copies_needed);
// Copies of inputs that a call reads `bytes_per_copy` of, enough that together they read twice
// `cache_bytes` (uncapped; 1 when the call reads nothing).
std::size_t copies_to_exceed(double bytes_per_copy, std::size_t cache_bytes);
// Copies for a case whose samples replay the same `calls_per_replay` calls (a CUDA graph): the
// smallest divisor of it that is at least `wanted`, so that each replay reads every copy equally
// often and none again sooner than a full round later (a replay's end meets the next's start);
// 0 when none is, or when that many copies of `footprint` bytes exceed the budget.
std::size_t replay_copies(std::size_t wanted, std::size_t calls_per_replay, double footprint, double budget);

// How a case's samples are made cold, from what its backend and impl say (plan_cold).
struct ColdFacts {
  bool timer_makes_cold = false;                 // the backend's timer flushes (Backend::timer_makes_cold)
  bool impl_rotates = true;                      // the impl reads input set `copy` in run(copy)
  std::optional<std::size_t> calls_per_replay;   // every sample replays these many calls (a CUDA graph)
  double footprint = 0, bytes_read = 0, budget = 0;  // bytes of one input set, read by a call, allowed
  std::size_t cache_bytes = 0;                   // the cache the copies must exceed
  // Of the footprint, lookup tables a call reads only rows of (OpSpec::is_table), where the impl
  // can share them between sets (Impl::shares_tables); 0: none, every set copies everything.
  double table_bytes = 0;
  double bytes_written = 0;  // by a call: with bytes_read, what a set with tables adds to the cache
  // The op has tables but the impl copies set 0 whole (the same indices in every set).
  bool tables_not_shared = false;
};
struct ColdPlan {
  ColdWay way = ColdWay::timer;  // timer also for a hot case: one set, nothing to do
  std::size_t copies = 1;
  std::size_t table_copies = 0;  // copies of the lookup tables the sets take in turn (0: one each)
  std::string hot_because;       // ColdWay::none: why the case is measured hot
  std::string partly_cached;     // ColdWay::rotate: why its copies may not be enough (capped, memory)
};
ColdPlan plan_cold(const ColdFacts& f);

// Copies of lookup tables of `table_bytes` for `sets` sets of `set_bytes` besides (sharing them):
// the fewest that hold twice the cache, as many as the budget leaves, at least 1, at most `sets`.
std::size_t table_copies(std::size_t sets, double set_bytes, double table_bytes, std::size_t cache_bytes,
                         double budget);

// Cold-cache copies for a case: enough input sets that rotating through them exceeds twice the
// last-level cache (a GPU's L2), bounded by a memory budget and at most kMaxColdCopies (a case of a
// few KB stays short of the cache: plan_cold says so). 1 when the op reads no memory.
inline constexpr std::size_t kMaxColdCopies = 4096;
std::size_t cold_copies(double footprint_bytes, std::size_t llc_bytes, double budget_bytes);

// Runs one case in this process: support check, memory check, setup, correctness check,
// measurement, second check. Never throws for a case-level problem: it becomes the status.
Result run_case(const Case& c, const RunOptions& options, const ProgressFn& progress = {},
                const std::atomic<bool>* cancel = nullptr);

// Checks one case's correctness in this process, untimed (`opmeter check`): the same checks as
// run_case before setup, setup with one input set, then one verify (fresh inputs, poisoned
// output, one call, the reference). `ok` (pass), `failed` with max_error vs tolerance, `skipped`
// with the reason, `error`, `crashed` or `timeout` (a worker's). Never throws for a case-level problem.
Result check_case(const Case& c, const RunOptions& options);

// Runs one case in a child process (this binary re-executed); crashes and hangs become
// `crashed` / `timeout` results. When *cancel becomes true (Ctrl-C) the child is stopped and the
// result is an `error` "interrupted", which run_all does not record.
Result run_case_isolated(const Case& c, const RunOptions& options, const std::atomic<bool>* cancel = nullptr);
// The reason of a case cut short by the interrupt (Ctrl-C / SIGTERM while it ran).
inline constexpr const char* kInterruptedReason = "interrupted";
// Result::energy_reason with energy_window_s 0: energy was switched off, not unreadable.
inline constexpr const char* kEnergyOffReason = "energy switched off (--energy-window 0, energy_window_s: 0)";
// Whether `r` is a case cut short by the interrupt (`cancel` set, an `error` kInterruptedReason):
// not a result, so neither run nor check records it and --resume runs it again.
bool cut_by_interrupt(const Result& r, const std::atomic<bool>* cancel);
// Whether a case runs in a child process: every case with `isolate`, and a C plugin's case by
// default (a plugin that exits or crashes then ends its case, not the run); run_in_child runs it
// there and names the plugin when it crashed or hung.
bool runs_in_child(const Case& c, const RunOptions& options);
Result run_in_child(const Case& c, const RunOptions& options, const std::atomic<bool>* cancel = nullptr);

// The measured ceilings of a run: peak GFLOP/s per (dtype, threads or GPU) from `peak` results
// (on a GPU: the tensor-core mma/wgmma kernels, FMA chains for fp32), memory bandwidth
// per thread count or GPU from `bandwidth` results that stream from memory; or, for the CPU,
// both from a calibration profile (`opmeter calibrate`).
class Ceilings {
 public:
  void learn(const Result& r);
  // Reads a calibration profile; throws UsageError when it is not one.
  void load_profile(const nlohmann::json& profile);
  void load_profile(const CalibrationProfile& profile);
  void annotate(Result& r) const;  // % of peak, % of bandwidth, roofline bound and efficiency
  // By where a case runs: `threads=N` on the CPU, `cuda:N` on a GPU (see where()).
  std::optional<double> peak(DType d, const std::string& at) const;
  std::optional<double> bandwidth(const std::string& at) const;
  std::optional<double> peak(DType d, int threads) const;  // on the CPU
  std::optional<double> bandwidth(int threads) const;
  static std::string where(const Case& c);

 private:
  std::map<std::pair<DType, std::string>, double> gflops_;
  std::map<std::string, double> gbps_;
  // What measured each ceiling (a case string, or the calibration profile), for the flags of
  // figures above it; a case measured while other processes took the CPUs is named in each result
  // rated against it (details `contended_ceilings`), of which the run warns.
  struct Source {
    std::string name;
    bool contended = false;
    std::string text() const { return contended ? name + " (contended: others took its CPUs)" : name; }
  };
  std::map<std::pair<DType, std::string>, Source> gflops_from_;
  std::map<std::string, Source> gbps_from_;
};

// Bandwidth results count as the memory ceiling when their arrays are at least this large.
constexpr double kMemoryCeilingMinBytes = 64.0 * (1 << 20);

// Adds the ceilings a list needs, in front: a peak case per (dtype, threads) for % of peak (on a
// GPU one per peak kernel of the dtype: fma, or mma and wgmma), and,
// for tensor ops (those with sweep axes), a memory-bandwidth case per thread count of
// `bandwidth_elements` fp32 elements for % of bandwidth and the roofline. None of those `known`
// holds already (a calibration profile's: its device and thread count, its dtypes).
std::vector<Case> with_needed_peaks(const std::vector<Case>& cases, std::size_t bandwidth_elements = 0,
                                    const Ceilings& known = Ceilings());

// A case of one of opmeter's own ceiling kernels (peak, bandwidth).
Case ceiling_case(const std::string& op, DType dtype, std::vector<std::pair<std::string, std::string>> params,
                  int threads);

inline constexpr const char* kCalibrationSchema = "opmeter-calibration/1";

// Runs cases in order, skipping those already in `previous` (resume). Reports each result as
// it finishes; returns previous + new results. Stops early when *cancel becomes true.
std::vector<Result> run_all(const std::vector<Case>& cases, std::vector<Result> previous, const RunOptions& options,
                            Reporter& reporter, const std::atomic<bool>* cancel);

}  // namespace opmeter
