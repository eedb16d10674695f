#pragma once
// `opmeter compare BASE NEW`: per case, the change of the median time, a Mann-Whitney U test on
// the raw samples, and a verdict; geometric means per op and overall; a gate for CI.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/result_set.hpp"

namespace opmeter {

struct CompareOptions {
  double alpha = 0.05;          // significance level of the U test
  double threshold_pct = 1.0;   // changes smaller than this are `same` whatever the test says
  double fail_above_pct = 5.0;  // a case confidently slower by more than this fails the gate
  // Compare GPU cases on their sustained figure (steady power) where both sides have one,
  // instead of the burst median; other cases as usual.
  bool sustained = false;
  // Cases measured in BASE and absent from NEW pass the gate (NEW measured a subset on purpose).
  // By default they fail it: a NEW run that stopped part-way has not shown it is no slower.
  bool allow_missing = false;
};

// faster / slower: significant and at least the threshold; same: below the threshold;
// uncertain: at least the threshold but not significant; untestable: at least the threshold, and
// `testable` false: too few samples for the test ever to reach alpha (can_reach_alpha).
// broken: measured in BASE, not in NEW (failed, skipped, ...); fixed: the other way round;
// unmeasured: measured on neither side. mixed: significant, but the ranks and the median point
// different ways (samples in clusters: NEW mostly slower with a faster median, or the reverse);
// it fails the gate when its median, or (the ranks saying slower) its mean, is slower by more
// than --fail-above.
// `direction` is the ranks' (rank_direction): +1 NEW tends slower, -1 faster, 0 neither.
std::string compare_verdict(double change, double p_value, bool testable, const CompareOptions& o, int direction = 0);
// Which way the U test points: +1 when NEW's samples tend to be the larger (slower), -1 smaller.
int rank_direction(double u_base_over_new, std::size_t n_base, std::size_t n_new);

// The smallest two-sided p-value the rank test gives n1 and n2 samples without ties: that of
// samples that do not overlap (exact up to 10 a side: 2 / C(n1 + n2, n1), 0.1 at 3 a side, 0.029
// at 4; the normal approximation beyond). Below alpha only with enough samples (and 3 a side).
double smallest_p_value(std::size_t n1, std::size_t n2);
bool can_reach_alpha(std::size_t n1, std::size_t n2, double alpha);

// The cases a set of records holds more than once (merged or resumed runs), in a phrase for a
// warning: "2 cases appear more than once (merged or resumed runs): CASE and 1 more"; "" when
// none does. compare and predict --measured take each one's last record.
std::string repeated_cases(const std::vector<std::string>& case_strings);

struct CaseChange {
  std::string case_string, op;
  std::string base_status, new_status;
  double base_median_s = 0, new_median_s = 0;
  double change = 0;        // new / base - 1 of the median time: +0.10 is 10% slower
  double p_value = 1;
  bool tested = false;  // the U test ran: both sides measured, with 3 samples or more each
  int direction = 0;    // the ranks' direction (rank_direction) when tested
  std::size_t base_samples = 0, new_samples = 0;
  std::string figure = "median";  // what was compared: the median (burst on a GPU) or "sustained"
  std::string verdict;
  bool fails_gate = false;  // slower or untestable beyond --fail-above, or broken
};

struct GroupSummary {
  std::string name;         // op name, or "all"
  std::size_t compared = 0; // cases measured on both sides
  double geomean_ratio = 1; // geometric mean of new/base median time over those cases
  std::size_t faster = 0, slower = 0, same = 0, uncertain = 0, untestable = 0, mixed = 0, broken = 0, fixed = 0,
              unmeasured = 0;
};

struct Comparison {
  std::string base_source, new_source;
  std::vector<CaseChange> cases;       // in BASE's order
  std::vector<std::string> only_base, only_new;
  std::vector<std::string> missing;    // of only_base, those BASE measured (ok): NEW lost them
  bool missing_fails = true;           // !CompareOptions::allow_missing
  std::vector<GroupSummary> per_op;    // by op name
  GroupSummary overall;
  std::vector<std::string> context_warnings;  // the two runs' machines or libraries differ
  bool gate_failed() const;
};

Comparison compare_results(const ResultSet& base, const ResultSet& neu, const CompareOptions& o = {});
// "3 faster, 1 slower, 0 same, 0 uncertain, 2 untestable": the first four always, the rest when
// there are any.
std::string verdict_counts(const GroupSummary& g);
// The first record of `set` that is ok without samples (a results file stripped of samples_s):
// compare tests the raw samples, so it refuses such a file. "" when there is none.
std::string unsampled_record(const ResultSet& set);
// Lines like "CPU model: BASE 'X', NEW 'Y'" for every context field that should match.
std::vector<std::string> context_differences(const nlohmann::json& base, const nlohmann::json& neu);
std::string compare_markdown(const Comparison& c, const CompareOptions& o);
nlohmann::json compare_json(const Comparison& c, const CompareOptions& o);

}  // namespace opmeter
