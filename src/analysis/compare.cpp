// Comparing two runs case by case: medians, a rank test on the raw samples, verdicts, a gate.
#include "analysis/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/element_types.hpp"
#include "opmeter/stats.hpp"
#include "util/human_units.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

constexpr std::size_t kMinTestableSamples = 3;
// An SQNR lower by more than this in NEW is a warning: on the same inputs it moves only when the
// recipe or its kernel changed (a tenth of a dB is far above its run-to-run variation: none).
constexpr double kSqnrDropDb = 0.1;

// Context fields that must match for a comparison to mean something. Versions of opmeter itself
// may differ: that is usually what is being compared.
// Nor may what decides the work of a cold case (the cache it is flushed past: --llc-bytes), the
// time a sample's batch of calls aims at, or how opmeter and its libraries were built.
const std::vector<std::string> kMustMatch = {"cpu.model",
                                             "cpu.usable_cpus",
                                             "cpu.governor",
                                             "libraries.",
                                             "gpus",
                                             "cuda.",
                                             "driver",
                                             "cpu.llc_bytes_used",
                                             "opmeter.build_type",
                                             "library_build_type",
                                             "run.stopping.target_sample_s"};

// Readings of the moment (a GPU's current clocks, its idle power) differ from run to run.
bool is_reading(const std::string& key) {
  return key.find("_now_") != std::string::npos || key.ends_with("idle_power_w");
}

bool must_match(const std::string& key) {
  if (is_reading(key)) return false;
  return std::any_of(kMustMatch.begin(), kMustMatch.end(), [&](const std::string& m) {
    return key == m || (m.back() == '.' ? key.rfind(m, 0) == 0 : key.rfind(m + ".", 0) == 0 || key.rfind(m + "[", 0) == 0);
  });
}

std::set<int> thread_counts(const std::vector<Result>& results) {
  std::set<int> t;
  for (auto& r : results) t.insert(r.kase.threads);
  return t;
}

std::string join_ints(const std::set<int>& s) { return fmt::format("{}", fmt::join(s, ",")); }

void count(GroupSummary& g, const CaseChange& c) {
  const auto& v = c.verdict;
  if (v == "faster") ++g.faster;
  if (v == "slower") ++g.slower;
  if (v == "same") ++g.same;
  if (v == "uncertain") ++g.uncertain;
  if (v == "broken") ++g.broken;
  if (v == "fixed") ++g.fixed;
  if (v == "untestable") ++g.untestable;
  if (v == "mixed") ++g.mixed;
  if (v == "unmeasured") ++g.unmeasured;
}

std::string pct(double change) { return fmt::format("{:+.2f}%", change * 100); }

std::string p_cell(const CaseChange& c) {
  if (!c.tested) return "-";
  return c.p_value < 1e-4 ? "<0.0001" : fmt::format("{:.4f}", c.p_value);
}

}  // namespace

std::string verdict_counts(const GroupSummary& g) {
  std::string out = fmt::format("{} faster, {} slower, {} same, {} uncertain", g.faster, g.slower, g.same, g.uncertain);
  for (auto [n, what] : {std::pair{g.untestable, "untestable"},
                         {g.mixed, "mixed"},
                         {g.broken, "broken"},
                         {g.fixed, "fixed"},
                         {g.unmeasured, "measured on neither side"}})
    if (n) out += fmt::format(", {} {}", n, what);
  return out;
}

std::string unsampled_record(const ResultSet& set) {
  for (auto& r : set.results)
    if (r.status == Status::ok && r.samples.empty()) return r.case_string;
  return "";
}

double smallest_p_value(std::size_t n1, std::size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  // What the test itself gives samples that do not overlap at all: exact (2 / C(n1 + n2, n1)) or
  // the normal approximation, whichever it uses at these sizes.
  std::vector<double> low(n1), high(n2);
  for (std::size_t i = 0; i < n1; ++i) low[i] = double(i);
  for (std::size_t i = 0; i < n2; ++i) high[i] = double(n1 + i);
  return mann_whitney_u(low, high).p_value;
}

std::string repeated_cases(const std::vector<std::string>& case_strings) {
  std::map<std::string, int> times;
  std::vector<std::string> repeated;
  for (auto& c : case_strings)
    if (++times[c] == 2) repeated.push_back(c);
  if (repeated.empty()) return "";
  return fmt::format("{} {} more than once (merged or resumed runs): {}{}", repeated.size(),
                     repeated.size() == 1 ? "case appears" : "cases appear", repeated.front(),
                     repeated.size() > 1 ? fmt::format(" and {} more", repeated.size() - 1) : "");
}

bool can_reach_alpha(std::size_t n1, std::size_t n2, double alpha) {
  return n1 >= kMinTestableSamples && n2 >= kMinTestableSamples && smallest_p_value(n1, n2) < alpha;
}

int rank_direction(double u_base_over_new, std::size_t n_base, std::size_t n_new) {
  const double mid = double(n_base) * double(n_new) / 2;
  return u_base_over_new < mid ? 1 : u_base_over_new > mid ? -1 : 0;
}

std::string compare_verdict(double change, double p_value, bool testable, const CompareOptions& o, int direction) {
  if (std::abs(change) * 100 < o.threshold_pct) return "same";
  if (!testable) return "untestable";
  if (p_value >= o.alpha) return "uncertain";
  // The test is two-sided on the ranks; the change is the medians'. Clustered samples can move the
  // two apart, and the median's direction alone would call a mostly slower NEW "faster".
  if (direction != 0 && (direction > 0) != (change > 0)) return "mixed";
  return change > 0 ? "slower" : "faster";
}

bool Comparison::gate_failed() const {
  return (missing_fails && !missing.empty()) ||
         std::any_of(cases.begin(), cases.end(), [](const CaseChange& c) { return c.fails_gate; });
}

std::vector<std::string> context_differences(const nlohmann::json& base, const nlohmann::json& neu) {
  std::vector<std::string> out;
  if (base.empty() || neu.empty()) {
    out.push_back(fmt::format("{} has no machine context (a results.jsonl journal): cannot check that both runs "
                              "used the same machine and libraries",
                              base.empty() ? "BASE" : "NEW"));
    return out;
  }
  auto a = flatten_json(base), b = flatten_json(neu);
  std::set<std::string> keys;
  for (auto& [k, v] : a) keys.insert(k);
  for (auto& [k, v] : b) keys.insert(k);
  for (auto& k : keys) {
    if (!must_match(k)) continue;
    // A run's settings are compared where both sides have them: a model or a machine has none.
    if (k.rfind("run.", 0) == 0 && !(a.count(k) && b.count(k))) continue;
    auto av = a.count(k) ? a[k] : "(absent)", bv = b.count(k) ? b[k] : "(absent)";
    if (av != bv) out.push_back(fmt::format("{} differs: BASE '{}', NEW '{}'", k, av, bv));
  }
  return out;
}

Comparison compare_results(const ResultSet& base, const ResultSet& neu, const CompareOptions& o) {
  Comparison cmp;
  cmp.missing_fails = !o.allow_missing;
  cmp.base_source = base.source;
  cmp.new_source = neu.source;
  cmp.context_warnings = context_differences(base.context, neu.context);
  if (auto tb = thread_counts(base.results), tn = thread_counts(neu.results); tb != tn && !tb.empty() && !tn.empty())
    cmp.context_warnings.push_back(fmt::format("thread counts differ: BASE {}, NEW {}", join_ints(tb), join_ints(tn)));

  // Cases measured while other processes took their CPUs: their changes may be the machine's.
  for (auto [side, set] : {std::pair{"BASE", &base}, std::pair{"NEW", &neu}}) {
    std::vector<std::string> contended;
    for (auto& r : set->results)
      if (r.has_flag("contended")) contended.push_back(r.case_string);
    if (!contended.empty())
      cmp.context_warnings.push_back(fmt::format(
          "{} {} {} measured while other processes took their CPUs (contended), so their changes may be the "
          "machine's: {}{}",
          contended.size(), side, contended.size() == 1 ? "case was" : "cases were", contended.front(),
          contended.size() > 1 ? fmt::format(" and {} more", contended.size() - 1) : ""));
  }

  // A case that appears twice (merged or resumed runs) counts by its last record, and says so:
  // in sets merged from two machines the records are of different machines.
  for (auto [side, set] : {std::pair{"BASE", &base}, std::pair{"NEW", &neu}}) {
    std::vector<std::string> cases;
    for (auto& r : set->results) cases.push_back(r.case_string);
    if (auto repeated = repeated_cases(cases); !repeated.empty())
      cmp.context_warnings.push_back(fmt::format("{}: {}; each is compared by its last record", side, repeated));
  }
  std::map<std::string, const Result*> by_case;
  for (auto& r : neu.results) by_case[r.case_string] = &r;
  std::set<std::string> seen;
  std::map<std::string, std::vector<double>> ratios;  // op -> new/base
  std::map<std::string, GroupSummary> groups;
  std::map<std::string, const Result*> base_last;
  for (auto& r : base.results) base_last[r.case_string] = &r;

  for (auto& r : base.results) {
    if (base_last[r.case_string] != &r) continue;
    auto it = by_case.find(r.case_string);
    if (it == by_case.end()) {
      cmp.only_base.push_back(r.case_string);
      if (r.status == Status::ok) cmp.missing.push_back(r.case_string);
      continue;
    }
    seen.insert(r.case_string);
    const Result& n = *it->second;
    if (auto bt = r.details.find("types"), nt = n.details.find("types");
        bt != r.details.end() && nt != n.details.end() &&
        element_types_compared(bt->second) != element_types_compared(nt->second))
      cmp.context_warnings.push_back(fmt::format("{} computes other types in the two runs (not the same work): BASE {}, NEW {}",
                                                 r.case_string, bt->second, nt->second));
    // A recipe's accuracy is its other figure: the same case on the same inputs gives the same SQNR
    // unless the recipe or its kernel changed, which a time comparison would pass in silence.
    if (auto bs = r.metrics.find("sqnr_db"), ns = n.metrics.find("sqnr_db");
        bs != r.metrics.end() && ns != n.metrics.end() && ns->second.value < bs->second.value - kSqnrDropDb)
      cmp.context_warnings.push_back(
          fmt::format("{}: SQNR fell from {:.1f} dB to {:.1f} dB (its accuracy, not its time)", r.case_string,
                      bs->second.value, ns->second.value));
    CaseChange c{r.case_string, r.kase.op, std::string(to_string(r.status)), std::string(to_string(n.status))};
    // Which figure each side is compared on: the burst median and its samples, or, with
    // --sustained and on both sides, the sustained ones.
    const bool use_sustained = o.sustained && r.sustained && n.sustained && r.sustained->summary.median > 0 &&
                               n.sustained->summary.median > 0;
    const auto& base_samples = use_sustained ? r.sustained->samples : r.samples;
    const auto& new_samples = use_sustained ? n.sustained->samples : n.samples;
    const double base_median = use_sustained ? r.sustained->summary.median : r.summary.median;
    const double new_median = use_sustained ? n.sustained->summary.median : n.summary.median;
    bool base_ok = r.status == Status::ok && base_median > 0;
    bool new_ok = n.status == Status::ok && new_median > 0;
    c.base_samples = base_samples.size();
    c.new_samples = new_samples.size();
    c.figure = use_sustained ? "sustained" : "median";
    if (base_ok) c.base_median_s = base_median;
    if (new_ok) c.new_median_s = new_median;
    if (base_ok && new_ok) {
      c.change = new_median / base_median - 1;
      if (c.base_samples >= kMinTestableSamples && c.new_samples >= kMinTestableSamples) {
        const auto test = mann_whitney_u(base_samples, new_samples);
        c.p_value = test.p_value;
        c.tested = true;
        c.direction = rank_direction(test.u, c.base_samples, c.new_samples);
      }
      // Ties can give a p the separated samples cannot (fewer distinct arrangements exactly, or
      // the tie-corrected variance past 10 a side): that p counts.
      const bool testable = can_reach_alpha(c.base_samples, c.new_samples, o.alpha) || c.p_value < o.alpha;
      c.verdict = compare_verdict(c.change, c.p_value, testable, o, c.direction);
      // Too few samples to test is no pass: a doubling measured 3 times a side fails the gate too.
      // A mixed case fails as far as either side of it is slower beyond --fail-above: its median,
      // or, where the ranks say NEW is slower, its mean (the clusters' weight the median misses).
      auto slower_beyond = [&](double change) { return change * 100 > o.fail_above_pct; };
      c.fails_gate =
          ((c.verdict == "slower" || c.verdict == "untestable") && slower_beyond(c.change)) ||
          (c.verdict == "mixed" &&
           (slower_beyond(c.change) || (c.direction > 0 && slower_beyond(mean(new_samples) / mean(base_samples) - 1))));
      ratios[c.op].push_back(1 + c.change);
    } else {
      c.verdict = base_ok ? "broken" : new_ok ? "fixed" : "unmeasured";
      c.fails_gate = c.verdict == "broken";
    }
    count(groups[c.op], c);
    count(cmp.overall, c);
    cmp.cases.push_back(c);
  }
  for (auto& r : neu.results)
    if (!base_last.count(r.case_string) && seen.insert(r.case_string).second) cmp.only_new.push_back(r.case_string);

  std::vector<double> all;
  for (auto& [op, g] : groups) {
    g.name = op;
    g.compared = ratios[op].size();
    g.geomean_ratio = ratios[op].empty() ? 1 : geomean(ratios[op]);
    all.insert(all.end(), ratios[op].begin(), ratios[op].end());
    cmp.per_op.push_back(g);
  }
  cmp.overall.name = "all";
  cmp.overall.compared = all.size();
  cmp.overall.geomean_ratio = all.empty() ? 1 : geomean(all);
  return cmp;
}

std::string compare_markdown(const Comparison& c, const CompareOptions& o) {
  std::string out = fmt::format("# opmeter compare\n\nBASE: `{}`  \nNEW: `{}`\n\n", c.base_source, c.new_source);
  for (auto& w : c.context_warnings) out += fmt::format("> **WARNING: {}**\n", w);
  if (!c.context_warnings.empty()) out += "\n";
  const auto& g = c.overall;
  out +=
      fmt::format("**{}**: {} compared, geometric mean of time {} ({}).{}\n\n", c.gate_failed() ? "FAIL" : "PASS",
                  count_of(g.compared, "case"), pct(g.geomean_ratio - 1), verdict_counts(g),
                  c.missing.empty() ? ""
                                    : fmt::format(" {} measured in BASE {} missing from NEW{}.", c.missing.size(),
                                                  c.missing.size() == 1 ? "is" : "are",
                                                  c.missing_fails ? " (fails the gate; --allow-missing allows a subset)"
                                                                  : " (allowed: --allow-missing)"));
  out += fmt::format(
      "Verdicts: Mann-Whitney U on the raw samples at alpha {0}, exact up to 10 a side; changes under {1}% "
      "are `same`; `untestable`: too few samples for the test to reach alpha (4 a side reach 0.05); "
      "`mixed`: significant, but the ranks and the median point different ways. The gate fails on "
      "`slower` or `untestable` by more than {2}%, on `mixed` whose median (or mean, where the ranks say slower) "
      "is slower by more than {2}%, on `broken`{3}.{4}\n\n",
      o.alpha, o.threshold_pct, o.fail_above_pct,
      o.allow_missing ? "" : " and on cases measured in BASE that NEW lacks",
      o.sustained ? " GPU cases are compared on their sustained figure where both runs have one." : "");
  out +=
      "| op | compared | geomean time change | faster | slower | same | uncertain | untestable | mixed | broken | "
      "fixed | unmeasured |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (auto& s : c.per_op)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", s.name, s.compared,
                       pct(s.geomean_ratio - 1), s.faster, s.slower, s.same, s.uncertain, s.untestable, s.mixed,
                       s.broken, s.fixed, s.unmeasured);

  // Worst first: what a reader of a failed gate looks for.
  std::vector<const CaseChange*> rows;
  for (auto& r : c.cases) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
    if (a->fails_gate != b->fails_gate) return a->fails_gate;
    return a->change > b->change;
  });
  out += "\n| case | BASE median | NEW median | change | p | verdict |\n|---|---:|---:|---:|---:|---|\n";
  for (auto* r : rows) {
    bool both = r->base_median_s > 0 && r->new_median_s > 0;
    out += fmt::format("| `{}` | {} | {} | {} | {} | {}{} |\n", r->case_string,
                       r->base_median_s > 0 ? human_time(r->base_median_s) : r->base_status,
                       r->new_median_s > 0 ? human_time(r->new_median_s) : r->new_status, both ? pct(r->change) : "-",
                       both ? p_cell(*r) : "-", r->fails_gate ? "**" + r->verdict + "**" : r->verdict,
                       r->fails_gate ? " (fails the gate)" : "");
  }
  auto list = [&](const char* title, const std::vector<std::string>& v) {
    if (v.empty()) return;
    out += fmt::format("\n{} ({}):\n\n", title, v.size());
    for (auto& s : v) out += fmt::format("- `{}`\n", s);
  };
  list(c.missing.empty() ? "Only in BASE" : "Only in BASE (those it measured are missing from NEW)", c.only_base);
  list("Only in NEW", c.only_new);
  return out;
}

nlohmann::json compare_json(const Comparison& c, const CompareOptions& o) {
  auto group = [](const GroupSummary& g) {
    return nlohmann::json{{"name", g.name},
                          {"compared", g.compared},
                          {"geomean_ratio", g.compared ? nlohmann::json(g.geomean_ratio) : nlohmann::json()},
                          {"faster", g.faster},
                          {"slower", g.slower},
                          {"same", g.same},
                          {"uncertain", g.uncertain},
                          {"untestable", g.untestable},
                          {"mixed", g.mixed},
                          {"broken", g.broken},
                          {"fixed", g.fixed},
                          {"unmeasured", g.unmeasured}};
  };
  // What a case does not have is null: a consumer reads 0 as "no change" and 1 as a p.
  auto positive = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json cases = nlohmann::json::array(), ops = nlohmann::json::array();
  for (auto& r : c.cases) {
    const bool both = r.base_median_s > 0 && r.new_median_s > 0;
    cases.push_back({{"case", r.case_string},
                     {"op", r.op},
                     {"figure", r.figure},
                     {"base_status", r.base_status},
                     {"new_status", r.new_status},
                     {"base_median_s", positive(r.base_median_s)},
                     {"new_median_s", positive(r.new_median_s)},
                     {"change", both ? nlohmann::json(r.change) : nullptr},
                     {"p_value", r.tested ? nlohmann::json(r.p_value) : nullptr},
                     {"base_samples", r.base_samples},
                     {"new_samples", r.new_samples},
                     {"verdict", r.verdict},
                     {"fails_gate", r.fails_gate}});
  }
  for (auto& g : c.per_op) ops.push_back(group(g));
  return {{"schema", "opmeter-compare/2"},  // /2: nulls where there is no value, mixed, missing
          {"base", c.base_source},
          {"new", c.new_source},
          {"options",
           {{"alpha", o.alpha},
            {"threshold_pct", o.threshold_pct},
            {"fail_above_pct", o.fail_above_pct},
            {"sustained", o.sustained},
            {"allow_missing", o.allow_missing}}},
          {"gate", c.gate_failed() ? "fail" : "pass"},
          {"warnings", c.context_warnings},
          {"overall", group(c.overall)},
          {"per_op", ops},
          {"cases", cases},
          {"only_base", c.only_base},
          {"missing", c.missing},
          {"only_new", c.only_new}};
}

}  // namespace opmeter
