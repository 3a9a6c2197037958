#include "fit/training_rows.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include <Eigen/Cholesky>
#include <Eigen/QR>

#include "util/errors.h"
#include "util/row_order.h"

namespace wattcal {
namespace {

std::string FreqPairText(const Layout& layout, const std::vector<double>& pair) {
  std::string s;
  for (size_t d = 0; d < pair.size(); ++d) {
    s += fmt::format("{}{} MHz {}", d > 0 ? ", " : "", pair[d],
                     layout.domains[d].name == "mem" ? "memory" : layout.domains[d].name);
  }
  return s;
}

}  // namespace

TrainingSelection SelectTrainingRows(const Corpus& corpus, bool keep_flagged) {
  // How many names the message lists per flag.
  constexpr size_t kMaxListed = 10;
  TrainingSelection out;
  std::vector<int> kept;
  for (int r = 0; r < corpus.rows(); ++r) {
    const bool left_out = IsThrottledRow(corpus, r) || HasFlag(corpus, r, kCorpusFlagSampleGap) ||
                          HasFlag(corpus, r, kCorpusFlagDataToggle);
    (!keep_flagged && left_out ? out.left_out : kept).push_back(r);
  }
  if (out.left_out.empty()) {
    out.rows = corpus;
    return out;
  }
  if (kept.empty()) {
    throw InputError(
        corpus.path, 0, "flags",
        fmt::format(
            "every one of the {} rows is flagged {}, {}, {} or {} (measured while the "
            "power cap acted, the clock moved or the power log had a gap, or data toggling "
            "unlike the rest): nothing to train on; pass --keep-flagged to train on them anyway",
            corpus.rows(), kCorpusFlagPowerCap, kCorpusFlagClockMoved, kCorpusFlagSampleGap,
            kCorpusFlagDataToggle));
  }
  out.rows = corpus.Subset(kept);
  // Each row is listed under the first of its flags in this order.
  const char* const kOrder[] = {kCorpusFlagPowerCap, kCorpusFlagClockMoved, kCorpusFlagSampleGap,
                                kCorpusFlagDataToggle};
  auto first_flag = [&](int r) -> std::string {
    for (const char* f : kOrder) {
      if (HasFlag(corpus, r, f)) return f;
    }
    return kCorpusFlagSampleGap;  // not reached: a left-out row has one of them
  };
  std::string groups;
  for (const char* flag : kOrder) {
    std::vector<std::string> names;
    for (int r : out.left_out) {
      if (first_flag(r) != flag) continue;
      if (std::find(names.begin(), names.end(), corpus.benchmark[r]) == names.end()) {
        names.push_back(corpus.benchmark[r]);
      }
    }
    if (names.empty()) continue;
    std::string list;
    for (size_t i = 0; i < names.size() && i < kMaxListed; ++i)
      list += (i > 0 ? ", " : "") + names[i];
    if (names.size() > kMaxListed) list += fmt::format(", and {} more", names.size() - kMaxListed);
    groups += fmt::format("{}{}: {}", groups.empty() ? "" : "; ", flag, list);
  }
  out.message = fmt::format("left out {} flagged row{} ({}); --keep-flagged trains on them",
                            out.left_out.size(), out.left_out.size() == 1 ? "" : "s", groups);
  return out;
}

std::vector<std::vector<double>> VfPairs(const Corpus& corpus) {
  const int nd = static_cast<int>(corpus.freq_mhz.cols());
  std::vector<double> keys(static_cast<size_t>(corpus.rows()) * nd);
  for (int r = 0; r < corpus.rows(); ++r) {
    for (int d = 0; d < nd; ++d) keys[static_cast<size_t>(r) * nd + d] = corpus.freq_mhz(r, d);
  }
  const std::vector<int> order = LexicographicRowOrder(keys, nd);
  std::vector<std::vector<double>> pairs;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0 && RowEquivalent(keys, nd, order[k - 1], order[k])) continue;
    const double* row = keys.data() + static_cast<size_t>(order[k]) * nd;
    pairs.emplace_back(row, row + nd);
  }
  return pairs;
}

std::string AutoFitMethod(const Corpus& corpus, bool keep_flagged, std::string* why) {
  const TrainingSelection selection = SelectTrainingRows(corpus, keep_flagged);
  const std::vector<std::vector<double>> pairs =
      selection.rows.has_freq() ? VfPairs(selection.rows) : std::vector<std::vector<double>>();
  if (pairs.size() <= 1) {
    *why = pairs.empty()
               ? fmt::format("--method auto: fixed (the {} training rows carry no clocks)",
                             selection.rows.rows())
               : fmt::format(
                     "--method auto: fixed (TPDS Eq. 9): one V-F pair ({}) among the {} "
                     "training rows",
                     FreqPairText(corpus.layout, pairs[0]), selection.rows.rows());
    return "fixed";
  }
  *why = fmt::format("--method auto: dvfs (TPDS Eqs. 4-6): {} V-F pairs among the {} training rows",
                     pairs.size(), selection.rows.rows());
  return "dvfs";
}

void CheckTwoVfPairs(const Corpus& corpus, const std::string& what, const std::string& fix) {
  if (!corpus.has_freq()) return;  // PrepareFitData names the missing frequencies
  const std::vector<std::vector<double>> pairs = VfPairs(corpus);
  if (pairs.size() != 1) return;
  throw OptionError(fmt::format("{} needs at least two V-F pairs; this corpus has one ({}): {}",
                                what, FreqPairText(corpus.layout, pairs[0]), fix));
}

namespace {
// Rank of `m` (column-pivoting QR with a relative threshold).
int RankOf(const Eigen::MatrixXd& m) {
  if (m.rows() == 0 || m.cols() == 0) return 0;
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
  qr.setThreshold(1e-9);
  return static_cast<int>(qr.rank());
}
}  // namespace

IdentifiabilityReport CheckIdentifiability(const Corpus& train, FitMethod method) {
  IdentifiabilityReport report;
  const int k = train.layout.num_components();
  const std::vector<std::string> names = train.layout.ComponentNames();
  const Corpus rows =
      method == FitMethod::kFixed && train.has_freq() ? train.Subset(train.RowsAtDefault()) : train;
  const std::string source = train.path.empty() ? std::string("the training corpus") : train.path;
  const std::string where = method == FitMethod::kFixed ? " at the default V-F pair" : "";
  if (rows.rows() == 0 || k == 0) return report;  // PrepareFitData names these
  constexpr double kTol = 1e-12;
  // 1. Components that never vary: all zero (fixed at 0, a warning) or constant non-zero (their
  //    power cannot be told from static power; fixed at 0, a warning).
  std::vector<int> active;
  for (int i = 0; i < k; ++i) {
    const Eigen::VectorXd col = rows.util_frac.col(i);
    const double lo = col.minCoeff(), hi = col.maxCoeff();
    if (hi - lo > kTol) {
      active.push_back(i);
      continue;
    }
    report.fixed_at_zero.push_back(i);
    report.notes.push_back(
        std::abs(hi) <= kTol
            ? fmt::format("{}: component {} never varies (always 0) in {} rows{}: its coefficient "
                          "is fixed at 0 and it cannot be predicted",
                          source, names[i], rows.rows(), where)
            : fmt::format("{}: component {} is constant {:.6g} across the {} rows{}: "
                          "indistinguishable from static power; its coefficient is fixed at 0",
                          source, names[i], lo, rows.rows(), where));
  }
  // 2. Fewer independent rows (distinct utilisation vectors) than parameters: underdetermined.
  // Rows as (U, f): sorted so, rows with equal U are adjacent too.
  const int nf = rows.has_freq() ? static_cast<int>(rows.freq_mhz.cols()) : 0;
  const int width = k + nf;
  std::vector<double> keys(static_cast<size_t>(rows.rows()) * width);
  for (int r = 0; r < rows.rows(); ++r) {
    double* key = keys.data() + static_cast<size_t>(r) * width;
    for (int i = 0; i < k; ++i) key[i] = rows.util_frac(r, i);
    for (int d = 0; d < nf; ++d) key[k + d] = rows.freq_mhz(r, d);
  }
  const std::vector<int> order = LexicographicRowOrder(keys, width);
  const size_t distinct_rows = CountDistinctRows(keys, width, order);
  std::vector<int> distinct_u_rows;  // the first row of every distinct U, in sorted order
  for (size_t j = 0; j < order.size(); ++j) {
    const double* a = keys.data() + static_cast<size_t>(order[j]) * width;
    const double* b = j > 0 ? keys.data() + static_cast<size_t>(order[j - 1]) * width : nullptr;
    if (b == nullptr || std::lexicographical_compare(b, b + k, a, a + k)) {
      distinct_u_rows.push_back(order[j]);
    }
  }
  const size_t distinct_u = distinct_u_rows.size();
  const int nonzero_components =
      k - static_cast<int>(report.fixed_at_zero.size()) +
      static_cast<int>(std::count_if(report.fixed_at_zero.begin(), report.fixed_at_zero.end(),
                                     [&](int i) { return std::abs(rows.util_frac(0, i)) > kTol; }));
  const int parameters = 1 + nonzero_components;
  if (static_cast<int>(distinct_u) < parameters) {
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: {} independent rows (distinct utilisation "
                                 "vectors{}) for {} parameters (static power and {} components "
                                 "with non-zero utilisation); add benchmarks that exercise the "
                                 "components differently",
                                 distinct_u, where, parameters, nonzero_components));
  }
  if (active.empty()) {
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: no component's utilisation varies across "
                                 "the {} rows{} (every column is constant): only static power "
                                 "could be fitted",
                                 rows.rows(), where));
  }
  // 3. Identical columns: the later component is fixed at 0 (a warning naming both).
  std::vector<int> kept;
  for (int i : active) {
    bool duplicate = false;
    for (int j : kept) {
      if ((rows.util_frac.col(i) - rows.util_frac.col(j)).cwiseAbs().maxCoeff() <= kTol) {
        report.fixed_at_zero.push_back(i);
        report.notes.push_back(fmt::format(
            "{}: component {}'s utilisation column is identical to {}'s column in every row{}: "
            "the fit cannot tell them apart; {}'s coefficient is fixed at 0 (its power goes to {})",
            source, names[i], names[j], where, names[i], names[j]));
        duplicate = true;
        break;
      }
    }
    if (!duplicate) kept.push_back(i);
  }
  // 4. Any other exact dependency among the components left is rank deficiency: an error.
  // On the distinct utilisation vectors: repeated rows add no rank (102 rows instead of 6528
  // on the Titan X).
  Eigen::MatrixXd kept_design(static_cast<Eigen::Index>(distinct_u_rows.size()),
                              1 + static_cast<int>(kept.size()));
  kept_design.col(0).setOnes();
  for (size_t r = 0; r < distinct_u_rows.size(); ++r) {
    for (size_t j = 0; j < kept.size(); ++j) {
      kept_design(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j + 1)) =
          rows.util_frac(distinct_u_rows[r], kept[j]);
    }
  }
  const int kept_rank = RankOf(kept_design);
  if (kept_rank < kept_design.cols()) {
    std::string list;
    for (int i : kept) list += (list.empty() ? "" : ", ") + names[i];
    throw InputError(source, 0, "",
                     fmt::format("underdetermined fit: the utilisations{} have rank {} for {} "
                                 "parameters (static power and {}): some components are a linear "
                                 "combination of others",
                                 where, kept_rank, kept_design.cols(), list));
  }
  // 5. DVFS: every frequency level adds a voltage; distinct rows must cover the parameters.
  if (method == FitMethod::kDvfs && rows.has_freq()) {
    int free_voltages = 0;
    for (int d = 0; d < rows.freq_mhz.cols(); ++d) {
      std::set<double> levels;
      for (int r = 0; r < rows.rows(); ++r) levels.insert(rows.freq_mhz(r, d));
      free_voltages += static_cast<int>(levels.size()) - 1;
    }
    const int dvfs_parameters =
        2 * rows.layout.num_domains() + static_cast<int>(kept.size()) + free_voltages;
    if (static_cast<int>(distinct_rows) < dvfs_parameters) {
      throw InputError(source, 0, "",
                       fmt::format("underdetermined fit: {} independent rows (distinct frequency "
                                   "and utilisation rows) for {} parameters ({} coefficients and "
                                   "{} voltages)",
                                   distinct_rows, dvfs_parameters, dvfs_parameters - free_voltages,
                                   free_voltages));
    }
  }
  std::sort(report.fixed_at_zero.begin(), report.fixed_at_zero.end());
  return report;
}

}  // namespace wattcal
