#pragma once
// What the performance models learn from and answer: cases with their work and, when measured,
// their median time per call.
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "results/result_set.hpp"

namespace opmeter::predict {

struct Sample {
  Case kase;
  std::string case_string;
  double flops = 0, bytes = 0;  // the op's work per call (OpDef::work)
  double time_s = 0;            // measured median seconds per call; 0 when not measured
  std::string source;           // the results it came from; empty for a case to predict
  // Flags of its result: measured while other processes took its CPUs (the time is theirs as much
  // as its own: fit_model leaves it out), or short of the precision target (kept, counted in a note).
  bool contended = false, unconverged = false;
};

// One model per device, op, impl, dtype and cache mode: "cpu/gemm/onednn/fp32" (cold),
// "cpu/gemm/onednn/fp32/hot".
std::string group_key(const Case& c);

// A case to predict: its work from the op registry, no time. UsageError for an op opmeter lacks.
Sample sample_of(const Case& c);

// The `ok` results of a result set with a positive median, as samples (source = rs.source).
// Other statuses are dropped.
std::vector<Sample> samples_from(const ResultSet& rs);

// Samples of several result sets; a case measured more than once keeps its last measurement,
// unless that one was contended and an earlier one was not.
std::vector<Sample> merge_samples(const std::vector<ResultSet>& sets);

}  // namespace opmeter::predict
