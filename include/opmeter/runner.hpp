#pragma once
#include <atomic>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "opmeter/engine.hpp"
#include "opmeter/reporter.hpp"
#include "opmeter/result.hpp"

namespace opmeter {

struct RunOptions {
  Stopping stopping;
  std::uint64_t seed = 20261122;
  bool isolate = false;         // each case in a child process under a deadline
  std::string self_exe;         // the opmeter binary to re-execute (isolation)
  double case_deadline_s = 0;   // isolation deadline per case; 0: 2 x timeout + 30 s
};

// Cold-cache copies for a case: enough input sets that rotating through them exceeds twice the
// last-level cache, bounded by a memory budget. 1 when hot or when the op reads no memory.
std::size_t cold_copies(double footprint_bytes, std::size_t llc_bytes, double budget_bytes);

// Runs one case in this process: support check, memory check, setup, correctness check,
// measurement, second check. Never throws for a case-level problem: it becomes the status.
Result run_case(const Case& c, const RunOptions& options, const ProgressFn& progress = {},
                const std::atomic<bool>* cancel = nullptr);

// Runs one case in a child process (this binary re-executed); crashes and hangs become
// `crashed` / `timeout` results.
Result run_case_isolated(const Case& c, const RunOptions& options);

// The measured ceilings of a run: peak GFLOP/s per (dtype, threads), from `peak` results.
class Ceilings {
 public:
  void learn(const Result& r);
  void annotate(Result& r) const;  // % of measured peak for ops that declare a peak dtype
 private:
  std::map<std::pair<DType, int>, double> gflops_;
};

// Adds the peak cases a list needs for % of peak (one per dtype and thread count) in front.
std::vector<Case> with_needed_peaks(const std::vector<Case>& cases);

// Runs cases in order, skipping those already in `previous` (resume). Reports each result as
// it finishes; returns previous + new results. Stops early when *cancel becomes true.
std::vector<Result> run_all(const std::vector<Case>& cases, std::vector<Result> previous, const RunOptions& options,
                            Reporter& reporter, const std::atomic<bool>* cancel);

}  // namespace opmeter
