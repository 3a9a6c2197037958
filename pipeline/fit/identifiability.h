// What a training corpus can identify, analysed once beside the fit (SPEC: unidentifiable
// components are refused or named). Three views of one question share one definition of a
// constant component (SplitConstantComponents):
//   * CheckIdentifiability: the fit's refusal and warnings, on the rows it trains on (rank of
//     the design, components fixed at 0, enough distinct rows for the parameters);
//   * AnalyseCollinearity: the correlations and condition number the report renders (below);
//   * FindIndistinguishableRows: rows with one utilisation vector but different powers, which
//     the calibrate stage names in the model's training notes.
//
// The collinearity analysis: how much the utilisations of a training corpus tell the model's
// components apart: the correlation of the microbenchmarks' utilisation vectors (TPDS'19 Fig. 3b)
// and of the components' utilisations across microbenchmarks (Fig. 13a), with a
// multicollinearity warning.
//
// Why it matters (TPDS'19 §5.1): the model is a regression on the utilisations; when two
// components' utilisations move together across the training suite (LDST and shared memory at
// r ~ 0.99 on the Titan Xp), the fit cannot tell their coefficients apart: it shares the power
// between them arbitrarily, and adding the second component lowers the prediction accuracy.
// Two numbers flag it here:
//   * the pairs of components whose utilisations correlate with |r| >= a threshold (0.95);
//   * the condition number kappa = sigma_max / sigma_min of the standardised utilisation matrix
//     (one row per microbenchmark, each non-constant component's column centred and scaled to
//     unit standard deviation): kappa above 30 marks strong near-linear dependencies among
//     several components at once, which pairwise correlations can miss (Belsley, Kuh & Welsch,
//     Regression Diagnostics, 1980, ch. 3).
//
// Each benchmark counts once (its row at the layout's default pair when it has one, else its
// first row): utilisations are measured at the reference pair and repeated on every V-F row.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "fit/calibrate.h"
#include "io/corpus.h"

namespace wattcal {

// A component whose utilisation spans at most this (max - min) over the rows analysed is
// constant: the fit fixes its coefficient at 0 and the correlations leave it out.
constexpr double kConstantUtilTolerance = 1e-12;

// The columns of a rows x components utilisation matrix, split by whether they vary.
struct ComponentSpread {
  // Columns whose max - min exceeds kConstantUtilTolerance, ascending.
  std::vector<int> varying;
  // The other columns, ascending.
  std::vector<int> constant;
};

// Splits the columns of `util_frac` (no rows: every column is constant).
ComponentSpread SplitConstantComponents(const Eigen::MatrixXd& util_frac);

// What the training rows can identify (SPEC: unidentifiable components are refused or named).
struct IdentifiabilityReport {
  // Components whose coefficient is fixed at 0: all zero, constant (indistinguishable from
  // static power), or a column identical to an earlier component's.
  std::vector<int> fixed_at_zero;
  // One warning per such component, naming it, the corpus and why.
  std::vector<std::string> notes;
};

// Checks the rank of the fit before the solve, on the rows `method` trains on (the default pair
// for fixed). InputError naming the corpus, the number of independent rows and of parameters
// when the fit is underdetermined (fewer distinct utilisation vectors than static power plus the
// non-zero components; any other exact linear dependency; DVFS: fewer distinct rows than
// coefficients plus voltages).
IdentifiabilityReport CheckIdentifiability(const Corpus& train, FitMethod method);

struct CollinearityOptions {
  // Pairs of components with |r| at or above this are reported as collinear; in (0, 1].
  double pair_threshold_abs_r = 0.95;
  // A condition number of the standardised utilisation matrix above this is reported; > 1.
  double condition_number_threshold = 30.0;

  // False, with a sentence naming the field, its value and the rule broken, when invalid.
  bool Check(std::string* error) const;
};

struct CorrelatedPair {
  std::string first;
  std::string second;
  double r = 0.0;  // Pearson correlation across benchmarks
};

struct CollinearityReport {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  std::string source;                   // corpus path
  std::vector<std::string> benchmarks;  // one per row of util_frac, in corpus order
  std::vector<std::string> components;  // layout order
  Eigen::MatrixXd util_frac;            // benchmarks x components
  // components x components Pearson r across benchmarks; NaN where a component is constant.
  Eigen::MatrixXd component_r;
  // benchmarks x benchmarks Pearson r of the utilisation vectors (across components); NaN for
  // a benchmark whose utilisations are all equal.
  Eigen::MatrixXd benchmark_r;
  // Components with the same utilisation in every benchmark (no information to fit them):
  // SplitConstantComponents' constant columns.
  std::vector<std::string> constant_components;
  // sigma_max / sigma_min of the standardised matrix of the non-constant components; infinite
  // when it is rank-deficient (fewer benchmarks than components, or an exact dependency); NaN
  // when fewer than two components vary.
  double condition_number = kNaN;
  // |r| >= pair_threshold_abs_r, by decreasing |r| (then component order).
  std::vector<CorrelatedPair> pairs;
  // Median |r| over the pairs of distinct benchmarks (TPDS Fig. 3b's histogram, in one number).
  double median_abs_benchmark_r = kNaN;
  // One sentence per finding (constant components, collinear pairs, a large condition number);
  // empty when nothing was found.
  std::vector<std::string> warnings;

  bool flagged() const { return !warnings.empty(); }
};

// Analyses `corpus` (any kind; needs at least two benchmarks and one component). Throws
// InputError naming the corpus when it has fewer than two benchmarks or no component, and
// OptionError when `options` fails Check().
CollinearityReport AnalyseCollinearity(const Corpus& corpus,
                                       const CollinearityOptions& options = {});

// Rows the model cannot tell apart: at the same V-F pair and with the same utilisation vector
// (each component within `util_rel_tol` relative, or 1e-12 absolute), yet measured powers
// that differ by more than `power_spread_frac` ((max - min) / min). The model of TPDS Eqs. 4-9
// is a function of (U, f) only, so it predicts one power for all of them (a real H100 SM sweep:
// nine int_add rows with one utilisation vector, 133 to 346 W).
struct IdentifiabilityOptions {
  // Two rows' utilisations of a component are "identical" when they differ by at most
  // max(util_abs_tol, util_rel_tol x the larger one). Real counters are noisy: the H100 SM
  // sweep's nine rows (one block on 1...132 SMs, time base sm__cycles_active.avg) agree to
  // 1.5e-4 relative, and a utilisation difference of 1e-3 (0.1% of a unit's peak) moves no
  // model's power measurably. Both >= 0.
  double util_rel_tol = 1e-3;
  double util_abs_tol = 1e-3;
  // Smallest relative power spread reported; >= 0.
  double power_spread_frac = 0.05;

  bool Check(std::string* error) const;
};

struct IndistinguishableRows {
  // Benchmark names of the rows, in corpus order.
  std::vector<std::string> benchmarks;
  // Their corpus row indices.
  std::vector<int> rows;
  double min_power_w = 0.0;
  double max_power_w = 0.0;
  // "rows a ... z have identical utilisations but power from 133 to 346 W: the model cannot
  // tell them apart"
  std::string message;
};

// Groups of indistinguishable rows of a measured corpus (empty without power), in order of
// each group's first row.
std::vector<IndistinguishableRows> FindIndistinguishableRows(
    const Corpus& corpus, const IdentifiabilityOptions& options = {});

}  // namespace wattcal
