#pragma once
#include <cstddef>
#include <vector>

namespace opmeter {

// Summary of a sample set; all statistics are pure functions of the samples.
struct Summary {
  std::size_t count = 0;
  double min = 0, max = 0, mean = 0, median = 0, stdev = 0;
  double q1 = 0, q3 = 0;                 // quartiles (linear interpolation, as numpy's default)
  double median_ci_low = 0, median_ci_high = 0;  // 95% distribution-free CI of the median (NaN: too few)
  // stdev / mean of the samples inside Tukey's far fences (Q1 - 3 IQR, Q3 + 3 IQR): a sample
  // stretched by a preemption does not decide whether a measurement converged.
  double rel_noise = 0;
  std::size_t outliers = 0;              // samples outside the far fences
  // Precision of the median: half the width of its 95% CI over the median. The stopping rule's
  // target; it shrinks like 1/sqrt(n) while rel_noise (the samples' own spread) does not.
  // Infinite (unknown) below kMinSamplesForMedianCi samples.
  double precision = 0;
};

// The fewest samples whose order statistics bracket the median with about 95% confidence: below
// this the widest interval there is, min..max, covers it with probability 1 - 2^(1-n) only (50%
// at 2 samples, 94% at 5), so no interval, and no precision, is claimed.
constexpr std::size_t kMinSamplesForMedianCi = 6;

double mean(const std::vector<double>& x);
double stdev(const std::vector<double>& x);  // sample standard deviation (n - 1)
double quantile(std::vector<double> x, double q);
double median(const std::vector<double>& x);
// 95% confidence interval of the median from order statistics (binomial, normal approximation).
// Returns {low, high}; NaN for fewer than kMinSamplesForMedianCi samples ({0, 0} for none).
std::pair<double, double> median_ci95(std::vector<double> x);
Summary summarize(const std::vector<double>& x);
// Summary::precision of x without a full sort (the stopping rule computes it while sampling).
// Infinity for fewer than kMinSamplesForMedianCi samples or a median <= 0.
double median_precision(std::vector<double> x);

// Plateau test of the stopping rule. `history` holds (samples, precision) checkpoints in the
// order they were taken. With independent samples, precision halves when the count quadruples;
// it has plateaued when the latest checkpoint improved on the one taken at a quarter of its count
// (or fewer) by less than `min_gain` (0.1 = 10%) -- timer resolution or drift, not more samples,
// now decides it.
struct PrecisionCheckpoint {
  std::size_t samples;
  double precision;
};
bool plateaued(const std::vector<PrecisionCheckpoint>& history, double min_gain = 0.1);
// rel_noise and outliers as defined in Summary.
std::pair<double, std::size_t> fenced_rel_noise(std::vector<double> x);

// Mann-Whitney U test (two-sided) of two independent samples: is one stochastically larger?
// `u` counts the pairs (x_i, y_j) with x_i > y_j, ties as one half. The p-value is exact for
// small samples (both sizes <= 10; with ties, the permutation distribution of the midranks),
// otherwise from the normal approximation with tie and continuity corrections. Both samples need
// at least one value (p = 1 otherwise).
struct MannWhitney {
  double u = 0;
  double p_value = 1;
  bool exact = false;
};
MannWhitney mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

// Geometric mean of positive values (0 for an empty list).
double geomean(const std::vector<double>& x);

// Running mean / variance (Welford), O(1) per sample, for the stopping criterion.
class RunningStats {
 public:
  void add(double x);
  std::size_t count() const { return n_; }
  double mean() const { return mean_; }
  double stdev() const;
  double rel_noise() const;  // stdev / mean; infinity with fewer than two samples
 private:
  std::size_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

}  // namespace opmeter
