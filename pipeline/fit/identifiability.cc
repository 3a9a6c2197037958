#include "fit/identifiability.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <Eigen/QR>
#include <Eigen/SVD>
#include <fmt/format.h>

#include "util/errors.h"
#include "util/option_rule.h"
#include "util/row_order.h"
#include "util/stats.h"

namespace wattcal {
namespace {

// Below this ratio sigma_min / sigma_max the standardised matrix counts as rank-deficient (its
// condition number is reported as infinite).
constexpr double kRankRelTolerance = 1e-12;

// A column or row of util_frac as a sample for util/stats.
std::vector<double> Sample(const Eigen::VectorXd& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

}  // namespace

bool CollinearityOptions::Check(std::string* error) const {
  if (!(pair_threshold_abs_r > 0.0 && pair_threshold_abs_r <= 1.0))
    return RejectOption(error, "pair_threshold_abs_r = {} must lie in (0, 1]",
                        pair_threshold_abs_r);
  if (!(condition_number_threshold > 1.0) || !std::isfinite(condition_number_threshold))
    return RejectOption(error, "condition_number_threshold = {} must be finite and > 1",
                        condition_number_threshold);
  return true;
}

ComponentSpread SplitConstantComponents(const Eigen::MatrixXd& util_frac) {
  ComponentSpread spread;
  for (int i = 0; i < static_cast<int>(util_frac.cols()); ++i) {
    const bool varies =
        util_frac.rows() > 0 &&
        util_frac.col(i).maxCoeff() - util_frac.col(i).minCoeff() > kConstantUtilTolerance;
    (varies ? spread.varying : spread.constant).push_back(i);
  }
  return spread;
}

namespace {

// Two utilisation columns differing by at most this in every row are identical.
constexpr double kIdenticalColumnTolerance = 1e-12;

// The rows CheckIdentifiability examines and how its messages name them.
struct FitRows {
  Corpus rows;                     // the rows the method trains on
  std::string source;              // the corpus path, or "the training corpus"
  std::string where;               // " at the default V-F pair" for fixed, else ""
  std::vector<std::string> names;  // component names, layout order
};

// The distinct rows of the fit's design.
struct DistinctRows {
  // Distinct (utilisation, frequency) rows.
  size_t distinct_rows = 0;
  // The first row of every distinct utilisation vector, in sorted order.
  std::vector<int> distinct_u_rows;
};

// Rank of `m` (column-pivoting QR with a relative threshold).
int RankOf(const Eigen::MatrixXd& m) {
  if (m.rows() == 0 || m.cols() == 0) return 0;
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
  qr.setThreshold(1e-9);
  return static_cast<int>(qr.rank());
}

// Step 1: components that never vary are fixed at 0, each with a warning (all zero: it cannot be
// predicted; constant non-zero: indistinguishable from static power). Returns the varying ones.
std::vector<int> FixConstantComponents(const FitRows& f, IdentifiabilityReport* report) {
  const Corpus& rows = f.rows;
  const ComponentSpread spread = SplitConstantComponents(rows.util_frac);
  for (int i : spread.constant) {
    const Eigen::VectorXd col = rows.util_frac.col(i);
    const double lo = col.minCoeff(), hi = col.maxCoeff();
    report->fixed_at_zero.push_back(i);
    report->notes.push_back(
        std::abs(hi) <= kConstantUtilTolerance
            ? fmt::format("{}: component {} never varies (always 0) in {} rows{}: its coefficient "
                          "is fixed at 0 and it cannot be predicted",
                          f.source, f.names[i], rows.rows(), f.where)
            : fmt::format("{}: component {} is constant {:.6g} across the {} rows{}: "
                          "indistinguishable from static power; its coefficient is fixed at 0",
                          f.source, f.names[i], lo, rows.rows(), f.where));
  }
  return spread.varying;
}

// Rows as (U, f), sorted so that rows with equal U are adjacent too: the number of distinct rows
// and the first row of every distinct U.
DistinctRows FindDistinctRows(const Corpus& rows) {
  const int k = rows.layout.num_components();
  const int nf = rows.has_freq() ? static_cast<int>(rows.freq_mhz.cols()) : 0;
  const int width = k + nf;
  std::vector<double> keys(static_cast<size_t>(rows.rows()) * width);
  for (int r = 0; r < rows.rows(); ++r) {
    double* key = keys.data() + static_cast<size_t>(r) * width;
    for (int i = 0; i < k; ++i) key[i] = rows.util_frac(r, i);
    for (int d = 0; d < nf; ++d) key[k + d] = rows.freq_mhz(r, d);
  }
  const std::vector<int> order = LexicographicRowOrder(keys, width);
  DistinctRows out;
  out.distinct_rows = CountDistinctRows(keys, width, order);
  for (size_t j = 0; j < order.size(); ++j) {
    const double* a = keys.data() + static_cast<size_t>(order[j]) * width;
    const double* b = j > 0 ? keys.data() + static_cast<size_t>(order[j - 1]) * width : nullptr;
    if (b == nullptr || std::lexicographical_compare(b, b + k, a, a + k)) {
      out.distinct_u_rows.push_back(order[j]);
    }
  }
  return out;
}

// Step 2: InputError when there are fewer independent rows (distinct utilisation vectors) than
// parameters, or when no component varies.
void CheckEnoughDistinctVectors(const FitRows& f, const DistinctRows& distinct,
                                const std::vector<int>& active,
                                const IdentifiabilityReport& report) {
  const Corpus& rows = f.rows;
  const int k = rows.layout.num_components();
  const size_t distinct_u = distinct.distinct_u_rows.size();
  const int nonzero_components =
      k - static_cast<int>(report.fixed_at_zero.size()) +
      static_cast<int>(std::count_if(
          report.fixed_at_zero.begin(), report.fixed_at_zero.end(),
          [&](int i) { return std::abs(rows.util_frac(0, i)) > kConstantUtilTolerance; }));
  const int parameters = 1 + nonzero_components;
  if (static_cast<int>(distinct_u) < parameters) {
    throw InputError(f.source, 0, "",
                     fmt::format("underdetermined fit: {} independent rows (distinct utilisation "
                                 "vectors{}) for {} parameters (static power and {} components "
                                 "with non-zero utilisation); add benchmarks that exercise the "
                                 "components differently",
                                 distinct_u, f.where, parameters, nonzero_components));
  }
  if (active.empty()) {
    throw InputError(f.source, 0, "",
                     fmt::format("underdetermined fit: no component's utilisation varies across "
                                 "the {} rows{} (every column is constant): only static power "
                                 "could be fitted",
                                 rows.rows(), f.where));
  }
}

// Step 3: of two identical columns the later component is fixed at 0 (a warning naming both).
// Returns the components kept.
std::vector<int> FixIdenticalColumns(const FitRows& f, const std::vector<int>& active,
                                     IdentifiabilityReport* report) {
  const Eigen::MatrixXd& u = f.rows.util_frac;
  std::vector<int> kept;
  for (int i : active) {
    bool duplicate = false;
    for (int j : kept) {
      if ((u.col(i) - u.col(j)).cwiseAbs().maxCoeff() <= kIdenticalColumnTolerance) {
        report->fixed_at_zero.push_back(i);
        report->notes.push_back(fmt::format(
            "{}: component {}'s utilisation column is identical to {}'s column in every row{}: "
            "the fit cannot tell them apart; {}'s coefficient is fixed at 0 (its power goes to {})",
            f.source, f.names[i], f.names[j], f.where, f.names[i], f.names[j]));
        duplicate = true;
        break;
      }
    }
    if (!duplicate) kept.push_back(i);
  }
  return kept;
}

// Step 4: any other exact dependency among the components kept is rank deficiency: an
// InputError. On the distinct utilisation vectors: repeated rows add no rank (102 rows instead
// of 6528 on the Titan X).
void CheckFullRank(const FitRows& f, const DistinctRows& distinct, const std::vector<int>& kept) {
  const std::vector<int>& design_rows = distinct.distinct_u_rows;
  Eigen::MatrixXd kept_design(static_cast<Eigen::Index>(design_rows.size()),
                              1 + static_cast<int>(kept.size()));
  kept_design.col(0).setOnes();
  for (size_t r = 0; r < design_rows.size(); ++r) {
    for (size_t j = 0; j < kept.size(); ++j) {
      kept_design(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j + 1)) =
          f.rows.util_frac(design_rows[r], kept[j]);
    }
  }
  const int kept_rank = RankOf(kept_design);
  if (kept_rank < kept_design.cols()) {
    std::string list;
    for (int i : kept) list += (list.empty() ? "" : ", ") + f.names[i];
    throw InputError(f.source, 0, "",
                     fmt::format("underdetermined fit: the utilisations{} have rank {} for {} "
                                 "parameters (static power and {}): some components are a linear "
                                 "combination of others",
                                 f.where, kept_rank, kept_design.cols(), list));
  }
}

// Step 5 (DVFS): every frequency level adds a voltage; the distinct rows must cover the
// parameters, else an InputError.
void CheckDvfsRowsCoverVoltages(const FitRows& f, size_t distinct_rows, int kept_components) {
  const Corpus& rows = f.rows;
  int free_voltages = 0;
  for (int d = 0; d < rows.freq_mhz.cols(); ++d) {
    std::set<double> levels;
    for (int r = 0; r < rows.rows(); ++r) levels.insert(rows.freq_mhz(r, d));
    free_voltages += static_cast<int>(levels.size()) - 1;
  }
  const int dvfs_parameters = 2 * rows.layout.num_domains() + kept_components + free_voltages;
  if (static_cast<int>(distinct_rows) < dvfs_parameters) {
    throw InputError(f.source, 0, "",
                     fmt::format("underdetermined fit: {} independent rows (distinct frequency "
                                 "and utilisation rows) for {} parameters ({} coefficients and "
                                 "{} voltages)",
                                 distinct_rows, dvfs_parameters, dvfs_parameters - free_voltages,
                                 free_voltages));
  }
}

}  // namespace

IdentifiabilityReport CheckIdentifiability(const Corpus& train, FitMethod method) {
  IdentifiabilityReport report;
  FitRows f;
  f.rows =
      method == FitMethod::kFixed && train.has_freq() ? train.Subset(train.RowsAtDefault()) : train;
  f.source = train.path.empty() ? std::string("the training corpus") : train.path;
  f.where = method == FitMethod::kFixed ? " at the default V-F pair" : "";
  f.names = train.layout.ComponentNames();
  if (f.rows.rows() == 0 || train.layout.num_components() == 0) {
    return report;  // PrepareFitData names these
  }
  const std::vector<int> active = FixConstantComponents(f, &report);
  const DistinctRows distinct = FindDistinctRows(f.rows);
  CheckEnoughDistinctVectors(f, distinct, active, report);
  const std::vector<int> kept = FixIdenticalColumns(f, active, &report);
  CheckFullRank(f, distinct, kept);
  if (method == FitMethod::kDvfs && f.rows.has_freq()) {
    CheckDvfsRowsCoverVoltages(f, distinct.distinct_rows, static_cast<int>(kept.size()));
  }
  std::sort(report.fixed_at_zero.begin(), report.fixed_at_zero.end());
  return report;
}

namespace {

// One row per benchmark: the one at the default pair when there is one, else the first. Fills
// r->benchmarks and returns the chosen corpus rows, in the same order.
std::vector<int> ChooseBenchmarkRows(const Corpus& corpus, CollinearityReport* r) {
  std::vector<int> chosen;
  std::vector<bool> at_default(static_cast<size_t>(corpus.rows()), false);
  if (corpus.has_freq()) {
    for (int row : corpus.RowsAtDefault()) at_default[static_cast<size_t>(row)] = true;
  }
  for (int row = 0; row < corpus.rows(); ++row) {
    const std::string& name = corpus.benchmark[static_cast<size_t>(row)];
    auto it = std::find(r->benchmarks.begin(), r->benchmarks.end(), name);
    if (it == r->benchmarks.end()) {
      r->benchmarks.push_back(name);
      chosen.push_back(row);
    } else if (at_default[static_cast<size_t>(row)]) {
      const size_t k = static_cast<size_t>(it - r->benchmarks.begin());
      if (!at_default[static_cast<size_t>(chosen[k])]) chosen[k] = row;
    }
  }
  return chosen;
}

// Component x component: r->component_r (NaN beside a constant component), the constant
// components and the pairs at or above the threshold, by decreasing |r|. Returns the varying
// components.
std::vector<int> CorrelateComponents(const CollinearityOptions& options, CollinearityReport* r) {
  const int p = static_cast<int>(r->components.size());
  const ComponentSpread spread = SplitConstantComponents(r->util_frac);
  std::vector<bool> constant(static_cast<size_t>(p), false);
  for (int c : spread.constant) {
    constant[static_cast<size_t>(c)] = true;
    r->constant_components.push_back(r->components[static_cast<size_t>(c)]);
  }
  r->component_r.resize(p, p);
  for (int a = 0; a < p; ++a) {
    for (int b = a; b < p; ++b) {
      const double value = constant[static_cast<size_t>(a)] || constant[static_cast<size_t>(b)]
                               ? CollinearityReport::kNaN
                               : PearsonR(Sample(r->util_frac.col(a)), Sample(r->util_frac.col(b)));
      r->component_r(a, b) = value;
      r->component_r(b, a) = value;
    }
  }
  for (int a = 0; a < p; ++a) {
    for (int b = a + 1; b < p; ++b) {
      const double value = r->component_r(a, b);
      if (std::isfinite(value) && std::abs(value) >= options.pair_threshold_abs_r) {
        r->pairs.push_back(
            {r->components[static_cast<size_t>(a)], r->components[static_cast<size_t>(b)], value});
      }
    }
  }
  std::stable_sort(r->pairs.begin(), r->pairs.end(),
                   [](const CorrelatedPair& x, const CorrelatedPair& y) {
                     return std::abs(x.r) > std::abs(y.r);
                   });
  return spread.varying;
}

// Benchmark x benchmark: r->benchmark_r and the median |r| off its diagonal.
void CorrelateBenchmarks(CollinearityReport* r) {
  const int n = static_cast<int>(r->util_frac.rows());
  r->benchmark_r.resize(n, n);
  std::vector<double> off_diagonal;
  for (int a = 0; a < n; ++a) {
    for (int b = a; b < n; ++b) {
      const double value = PearsonR(Sample(r->util_frac.row(a).transpose()),
                                    Sample(r->util_frac.row(b).transpose()));
      r->benchmark_r(a, b) = value;
      r->benchmark_r(b, a) = value;
      if (b > a && std::isfinite(value)) off_diagonal.push_back(std::abs(value));
    }
  }
  r->median_abs_benchmark_r = Median(off_diagonal);
}

// Condition number of the standardised matrix of the `varying` columns of `util_frac`
// (Belsley, Kuh & Welsch): infinite when rank-deficient, NaN when fewer than two vary.
double StandardisedConditionNumber(const Eigen::MatrixXd& util_frac,
                                   const std::vector<int>& varying) {
  const int n = static_cast<int>(util_frac.rows());
  const int q = static_cast<int>(varying.size());
  if (q < 2) return CollinearityReport::kNaN;
  if (n < q) return std::numeric_limits<double>::infinity();
  Eigen::MatrixXd z(n, q);
  for (int j = 0; j < q; ++j) {
    const Eigen::VectorXd column = util_frac.col(varying[static_cast<size_t>(j)]);
    const Eigen::ArrayXd centred = column.array() - column.mean();
    const double sd = std::sqrt((centred * centred).sum() / std::max(1, n - 1));
    z.col(j) = (centred / sd).matrix();
  }
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(z);
  const Eigen::VectorXd& s = svd.singularValues();
  const double largest = s(0);
  const double smallest = s(s.size() - 1);
  return smallest > kRankRelTolerance * largest ? largest / smallest
                                                : std::numeric_limits<double>::infinity();
}

// One warning per finding: constant components, collinear pairs, a rank-deficient or
// ill-conditioned standardised matrix (`q` varying components).
void AddCollinearityWarnings(const CollinearityOptions& options, int q, CollinearityReport* r) {
  const size_t n = r->benchmarks.size();
  if (!r->constant_components.empty()) {
    std::string names;
    for (const std::string& name : r->constant_components)
      names += (names.empty() ? "" : ", ") + name;
    r->warnings.push_back(fmt::format(
        "{} component(s) have the same utilisation in every benchmark ({}): their coefficients "
        "cannot be told apart from the constant terms",
        r->constant_components.size(), names));
  }
  if (!r->pairs.empty()) {
    std::string list;
    for (const CorrelatedPair& pair : r->pairs) {
      list += fmt::format("{}{} ~ {} (r = {:.3f})", list.empty() ? "" : ", ", pair.first,
                          pair.second, pair.r);
    }
    r->warnings.push_back(fmt::format(
        "{} pair(s) of components correlate with |r| >= {:g} across the benchmarks: {}; the fit "
        "cannot separate their coefficients (TPDS'19 §5.1: merge them or add benchmarks that "
        "exercise them apart)",
        r->pairs.size(), options.pair_threshold_abs_r, list));
  }
  if (std::isinf(r->condition_number)) {
    r->warnings.push_back(fmt::format(
        "the standardised utilisation matrix ({} benchmarks x {} varying components) is "
        "rank-deficient: some component's utilisation is an exact combination of others'",
        n, q));
  } else if (std::isfinite(r->condition_number) &&
             r->condition_number > options.condition_number_threshold) {
    r->warnings.push_back(fmt::format(
        "condition number {:.1f} of the standardised utilisation matrix exceeds {:g}: "
        "near-linear dependencies among the components' utilisations make some coefficients "
        "poorly determined",
        r->condition_number, options.condition_number_threshold));
  }
}

}  // namespace

CollinearityReport AnalyseCollinearity(const Corpus& corpus, const CollinearityOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError("invalid collinearity options: " + error);
  CollinearityReport r;
  r.source = corpus.path;
  r.components = corpus.layout.ComponentNames();
  const int p = static_cast<int>(r.components.size());
  if (p == 0) {
    throw InputError(corpus.path, corpus.components_line, "components",
                     "the corpus names no component: nothing to correlate");
  }
  const std::vector<int> chosen = ChooseBenchmarkRows(corpus, &r);
  const int n = static_cast<int>(chosen.size());
  if (n < 2) {
    throw InputError(corpus.path, 0, "benchmark",
                     fmt::format("{} benchmark(s): correlations need at least two", n));
  }
  r.util_frac.resize(n, p);
  for (int i = 0; i < n; ++i)
    r.util_frac.row(i) = corpus.util_frac.row(chosen[static_cast<size_t>(i)]);
  const std::vector<int> varying = CorrelateComponents(options, &r);
  CorrelateBenchmarks(&r);
  r.condition_number = StandardisedConditionNumber(r.util_frac, varying);
  AddCollinearityWarnings(options, static_cast<int>(varying.size()), &r);
  return r;
}

bool IdentifiabilityOptions::Check(std::string* error) const {
  if (!(util_rel_tol >= 0.0) || !std::isfinite(util_rel_tol))
    return RejectOption(error, "util_rel_tol = {} must be a finite number >= 0", util_rel_tol);
  if (!(util_abs_tol >= 0.0) || !std::isfinite(util_abs_tol))
    return RejectOption(error, "util_abs_tol = {} must be a finite number >= 0", util_abs_tol);
  if (!(power_spread_frac >= 0.0) || !std::isfinite(power_spread_frac))
    return RejectOption(error, "power_spread_frac = {} must be a finite number >= 0",
                        power_spread_frac);
  return true;
}

std::vector<IndistinguishableRows> FindIndistinguishableRows(
    const Corpus& corpus, const IdentifiabilityOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  std::vector<IndistinguishableRows> out;
  if (!corpus.has_power()) return out;
  const int n = corpus.rows();
  const int nc = static_cast<int>(corpus.util_frac.cols());
  auto same = [&](int a, int b) {
    for (int d = 0; d < corpus.freq_mhz.cols(); ++d) {
      if (corpus.freq_mhz(a, d) != corpus.freq_mhz(b, d)) return false;
    }
    for (int i = 0; i < nc; ++i) {
      const double ua = corpus.util_frac(a, i), ub = corpus.util_frac(b, i);
      const double tol = std::max(options.util_abs_tol,
                                  options.util_rel_tol * std::max(std::abs(ua), std::abs(ub)));
      if (std::abs(ua - ub) > tol) return false;
    }
    return true;
  };
  // Rows sorted by (frequencies, utilisations) so that equal rows are neighbours; a group is
  // the rows each equal (within tolerance) to its first row. The component with the most
  // distinct values leads the sort, so that the scan for a row's equals stops as soon as that
  // component differs by more than the tolerance, and rows exactly equal are compared once as
  // a run: O(n log n) plus the near-equal windows (a 10^6-row corpus used to take minutes).
  int lead = 0;
  size_t most_distinct = 0;
  for (int i = 0; i < nc; ++i) {
    std::vector<double> v(corpus.util_frac.col(i).data(), corpus.util_frac.col(i).data() + n);
    std::sort(v.begin(), v.end());
    const size_t distinct = static_cast<size_t>(std::unique(v.begin(), v.end()) - v.begin());
    if (distinct > most_distinct) most_distinct = distinct, lead = i;
  }
  std::vector<int> order(n);
  for (int r = 0; r < n; ++r) order[r] = r;
  auto same_freq = [&](int a, int b) {
    for (int d = 0; d < corpus.freq_mhz.cols(); ++d) {
      if (corpus.freq_mhz(a, d) != corpus.freq_mhz(b, d)) return false;
    }
    return true;
  };
  auto key_less = [&](int a, int b) {
    for (int d = 0; d < corpus.freq_mhz.cols(); ++d) {
      if (corpus.freq_mhz(a, d) != corpus.freq_mhz(b, d))
        return corpus.freq_mhz(a, d) < corpus.freq_mhz(b, d);
    }
    if (nc > 0 && corpus.util_frac(a, lead) != corpus.util_frac(b, lead)) {
      return corpus.util_frac(a, lead) < corpus.util_frac(b, lead);
    }
    for (int i = 0; i < nc; ++i) {
      if (corpus.util_frac(a, i) != corpus.util_frac(b, i))
        return corpus.util_frac(a, i) < corpus.util_frac(b, i);
    }
    return a < b;
  };
  std::sort(order.begin(), order.end(), key_less);
  auto exactly_equal = [&](int a, int b) {
    return same_freq(a, b) && (nc == 0 || corpus.util_frac.row(a) == corpus.util_frac.row(b));
  };
  std::vector<std::vector<int>> runs;  // rows exactly equal, in sorted order
  for (int k = 0; k < n; ++k) {
    if (runs.empty() || !exactly_equal(runs.back().front(), order[k])) runs.emplace_back();
    runs.back().push_back(order[k]);
  }
  // A run that joined an earlier row's group (reported or not) is not examined again: each row
  // belongs to at most one group, which keeps repeated near-equal rows linear.
  std::vector<bool> grouped(runs.size(), false);
  for (size_t k = 0; k < runs.size(); ++k) {
    if (grouped[k]) continue;
    grouped[k] = true;
    const int first = runs[k].front();
    std::vector<int> members = runs[k];
    std::vector<size_t> joined;
    for (size_t j = k + 1; j < runs.size(); ++j) {
      const int other = runs[j].front();
      if (!same_freq(first, other)) break;  // past this V-F pair
      if (nc > 0) {
        const double ua = corpus.util_frac(first, lead), ub = corpus.util_frac(other, lead);
        const double tol = std::max(options.util_abs_tol,
                                    options.util_rel_tol * std::max(std::abs(ua), std::abs(ub)));
        if (ub - ua > tol && options.util_rel_tol < 1.0) break;  // every later row differs more
      }
      if (grouped[j] || !same(first, other)) continue;
      members.insert(members.end(), runs[j].begin(), runs[j].end());
      joined.push_back(j);
    }
    if (members.size() < 2) continue;
    std::sort(members.begin(), members.end());
    double lo = corpus.power_w(members[0]), hi = lo;
    for (int r : members) {
      lo = std::min(lo, corpus.power_w(r));
      hi = std::max(hi, corpus.power_w(r));
    }
    for (size_t j : joined) grouped[j] = true;
    if (!((hi - lo) / lo > options.power_spread_frac)) continue;
    IndistinguishableRows g;
    g.rows = members;
    for (int r : members) g.benchmarks.push_back(corpus.benchmark[r]);
    g.min_power_w = lo;
    g.max_power_w = hi;
    const std::string names = members.size() == 2
                                  ? g.benchmarks.front() + " and " + g.benchmarks.back()
                                  : g.benchmarks.front() + " ... " + g.benchmarks.back();
    g.message = fmt::format(
        "rows {} have identical utilisations but power from {:.4g} to {:.4g} W: "
        "the model cannot tell them apart",
        names, lo, hi);
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(),
            [](const IndistinguishableRows& a, const IndistinguishableRows& b) {
              return a.rows.front() < b.rows.front();
            });
  return out;
}

}  // namespace wattcal
