#include "fit/training_rows.h"

#include <fmt/format.h>

#include <algorithm>

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
                          HasFlag(corpus, r, kCorpusFlagDataToggle) ||
                          HasFlag(corpus, r, kCorpusFlagMetricAbsent) ||
                          HasFlag(corpus, r, kCorpusFlagFewFieldSamples);
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
            "every one of the {} rows is flagged {}, {}, {}, {}, {} or {} (measured while the "
            "power cap acted, the clock moved or the power log had a gap, data toggling "
            "unlike the rest, a utilisation not measured, or too few field samples): "
            "nothing to train on; pass --keep-flagged to train on them anyway",
            corpus.rows(), kCorpusFlagPowerCap, kCorpusFlagClockMoved, kCorpusFlagSampleGap,
            kCorpusFlagDataToggle, kCorpusFlagMetricAbsent, kCorpusFlagFewFieldSamples));
  }
  out.rows = corpus.Subset(kept);
  // Each row is listed under the first of its flags in this order.
  const char* const kOrder[] = {kCorpusFlagPowerCap,     kCorpusFlagClockMoved,
                                kCorpusFlagSampleGap,    kCorpusFlagDataToggle,
                                kCorpusFlagMetricAbsent, kCorpusFlagFewFieldSamples};
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

FitMethod AutoFitMethod(const Corpus& corpus, bool keep_flagged, std::string* why) {
  return AutoFitMethod(SelectTrainingRows(corpus, keep_flagged), why);
}

FitMethod AutoFitMethod(const TrainingSelection& selection, std::string* why) {
  const std::vector<std::vector<double>> pairs =
      selection.rows.has_freq() ? VfPairs(selection.rows) : std::vector<std::vector<double>>();
  if (pairs.size() <= 1) {
    *why = pairs.empty()
               ? fmt::format("--method auto: fixed (the {} training rows carry no clocks)",
                             selection.rows.rows())
               : fmt::format(
                     "--method auto: fixed (TPDS Eq. 9): one V-F pair ({}) among the {} "
                     "training rows",
                     FreqPairText(selection.rows.layout, pairs[0]), selection.rows.rows());
    return FitMethod::kFixed;
  }
  *why = fmt::format("--method auto: dvfs (TPDS Eqs. 4-6): {} V-F pairs among the {} training rows",
                     pairs.size(), selection.rows.rows());
  return FitMethod::kDvfs;
}

void CheckTwoVfPairs(const Corpus& corpus, const std::string& what, const std::string& fix) {
  if (!corpus.has_freq()) return;  // PrepareFitData names the missing frequencies
  const std::vector<std::vector<double>> pairs = VfPairs(corpus);
  if (pairs.size() != 1) return;
  throw OptionError(fmt::format("{} needs at least two V-F pairs; this corpus has one ({}): {}",
                                what, FreqPairText(corpus.layout, pairs[0]), fix));
}

}  // namespace wattcal
