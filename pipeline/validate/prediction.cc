#include "validate/prediction.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "model/power_limit.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {

const char* PredictModeName(PredictMode mode) {
  switch (mode) {
    case PredictMode::kDvfs: return "dvfs";
    case PredictMode::kFixed: return "fixed";
    case PredictMode::kScaling: return "scaling";
  }
  return "?";
}

namespace {

bool AtPair(const Corpus& c, int r, const std::vector<double>& pair) {
  for (int d = 0; d < c.layout.num_domains(); ++d) {
    if (c.freq_mhz(r, d) != pair[d]) return false;
  }
  return true;
}

// Refuses held-out rows the model cannot be checked on: another layout, no power, no clocks.
void CheckHeldout(const PowerModel& model, const Corpus& heldout) {
  const std::string mismatch = model.layout.Mismatch(heldout.layout);
  if (!mismatch.empty()) {
    throw InputError(heldout.path, heldout.components_line, "component names",
                     model.LayoutMismatchMessage(mismatch));
  }
  if (!heldout.has_power()) {
    throw InputError(heldout.path, 0, "power_w", "held-out file has no measured power");
  }
  if (!heldout.has_freq()) {
    throw InputError(heldout.path, 0, "f_core_mhz", "held-out file has no frequencies");
  }
}

std::string PairText(const std::vector<double>& pair) {
  std::string text;
  for (double v : pair) text += (text.empty() ? "" : "/") + fmt::format("{}", v);
  return text;
}

// What the held-out rows are predicted with: the model, the mode, the default pair, the fixed
// model's pair, and each workload's rows at them.
struct HeldoutSetting {
  const PowerModel& model;
  const Corpus& heldout;
  PredictMode mode;
  int nd;                          // frequency domains
  std::vector<double> defaults;    // the model's default pair
  std::vector<double> fixed_pair;  // the pair the fixed model was calibrated at (its one level)
  std::map<std::string, int> anchor_row;          // a workload's first row at the default pair
  std::map<std::string, bool> has_reference_row;  // a workload has a row at fixed_pair
};

// Whether row r (clocks f) lies outside the levels the model estimated, so that it is predicted
// at the default pair: only a throttled row may, any other is refused.
bool OutsideModelClocks(const HeldoutSetting& s, int r, const Eigen::VectorXd& f, bool throttled) {
  const PowerModel& model = s.model;
  for (int d = 0; d < s.nd; ++d) {
    if (model.Covers(d, f(d))) continue;
    if (!throttled) {
      throw InputError(
          s.heldout.path, s.heldout.line[r], fmt::format("f_{}_mhz", model.layout.domains[d].name),
          fmt::format("'{}' at {} MHz lies outside the model's estimated {} levels ({} to {} MHz) "
                      "and is not flagged {} or {}, so {} mode cannot predict it; use --mode "
                      "fixed or a model calibrated over that clock",
                      s.heldout.benchmark[r], f(d), model.layout.domains[d].name,
                      model.freq_levels_mhz[d].front(), model.freq_levels_mhz[d].back(),
                      kCorpusFlagPowerCap, kCorpusFlagClockMoved, PredictModeName(s.mode)));
    }
    return true;  // a throttled measurement: what the board would draw at full clock
  }
  return false;
}

// Scaling mode: `uncapped`, the model's power for row r (activity u), scaled to the workload's
// measured power at the default pair; a throttled row without one is predicted at the default
// pair instead, any other is refused.
void ScaleToDefaultPair(const HeldoutSetting& s, int r, const Eigen::VectorXd& u, bool throttled,
                        bool* at_reference, std::vector<double>* eval, double* uncapped) {
  const std::string& workload = s.heldout.benchmark[r];
  const auto it = s.anchor_row.find(workload);
  if (it != s.anchor_row.end()) {
    const int a = it->second;
    const Eigen::VectorXd ua = s.heldout.util_frac.row(a).transpose();
    // TPDS Eq. 10: P(f2) = P_model(f2) / P_model(f1) * P_meas(f1).
    *uncapped = *uncapped / s.model.PredictAtDefault(ua.data()) * s.heldout.power_w(a);
  } else if (throttled) {
    *at_reference = true;
    *eval = s.defaults;
    *uncapped = s.model.Predict(u.data(), eval->data());
  } else {
    throw InputError(s.heldout.path, s.heldout.line[r], "benchmark",
                     fmt::format("scaling mode needs '{}' measured at the default pair {} "
                                 "MHz, and the file has no such row",
                                 workload, PairText(s.defaults)));
  }
}

// Held-out row r's prediction, its flags and extrapolation note; with a power limit, capped
// there.
PredictionRow PredictRow(const HeldoutSetting& s, int r, std::optional<double> power_limit_w) {
  const PowerModel& model = s.model;
  const Corpus& heldout = s.heldout;
  const int nd = s.nd;
  const std::string& workload = heldout.benchmark[r];
  const bool throttled = IsThrottledRow(heldout, r);
  const Eigen::VectorXd u = heldout.util_frac.row(r).transpose();
  const Eigen::VectorXd f = heldout.freq_mhz.row(r).transpose();
  std::vector<std::string> flags;
  // The pair the model is evaluated at, and whether the row is predicted there instead of at
  // its own (throttled) clock.
  std::vector<double> eval(f.data(), f.data() + nd);
  bool at_reference = false;
  if (s.mode == PredictMode::kFixed) {
    at_reference = !AtPair(heldout, r, s.fixed_pair);
    eval = s.fixed_pair;
  } else {
    at_reference = OutsideModelClocks(s, r, f, throttled);
    if (at_reference) eval = s.defaults;
  }
  PredictionRow row;
  row.benchmark = workload;
  row.f_core_mhz = f(0);
  row.f_mem_mhz = nd > 1 ? f(1) : 0.0;
  row.measured_w = heldout.power_w(r);
  row.line = heldout.line[r];
  if (heldout.has_energy()) {
    row.duration_s = heldout.duration_s[r];
    row.measured_energy_j = heldout.energy_j[r];
  }
  row.measured_capped = HasFlag(heldout, r, kCorpusFlagPowerCap);
  double uncapped = model.Predict(u.data(), eval.data());
  if (s.mode == PredictMode::kScaling && !at_reference) {
    ScaleToDefaultPair(s, r, u, throttled, &at_reference, &eval, &uncapped);
  }
  if (at_reference) flags.push_back(kPredictionFlagAtReferenceClock);
  // The board's limit: P = min(P_model, P_limit); the capped clock along the V-F curve.
  row.uncapped_w = uncapped;
  row.predicted_w = uncapped;
  row.f_run_core_mhz = eval[0];
  if (power_limit_w && uncapped > *power_limit_w) {
    row.predicted_w = *power_limit_w;
    row.capped = true;
    row.f_run_core_mhz = CapCoreFrequencyMhz(model, u.data(), eval.data(), *power_limit_w);
    flags.insert(flags.begin(), kPredictionFlagCapped);
  }
  for (const std::string& flag : ExtrapolationFlags(model, u.data(), uncapped))
    flags.push_back(flag);
  row.flags = JoinFlags(flags);
  row.extrapolation_note = ExtrapolationMessage(model, workload, u.data(), uncapped);
  return row;
}

}  // namespace

std::vector<PredictionRow> PredictHeldout(const PowerModel& model, const Corpus& given,
                                          PredictMode mode, std::optional<double> power_limit_w) {
  std::string note;
  const Corpus heldout = WithoutOptionalComponentsNotIn(given, model.layout, &note);
  if (!note.empty()) LogWarning(note);
  CheckHeldout(model, heldout);
  HeldoutSetting s{model, heldout, mode, model.layout.num_domains(), model.DefaultFrequencies(),
                   {},    {},      {}};
  // The fixed model predicts at the pair it was calibrated at (its single level).
  s.fixed_pair = s.defaults;
  if (model.method == FitMethod::kFixed) {
    for (int d = 0; d < s.nd; ++d) s.fixed_pair[d] = model.freq_levels_mhz[d].front();
  }
  // Scaling (TPDS Eq. 10) needs each benchmark's measured power at the default pair; fixed
  // mode keeps a workload's rows at the reference pair when it has any.
  for (int r = 0; r < heldout.rows(); ++r) {
    if (AtPair(heldout, r, s.defaults)) s.anchor_row.emplace(heldout.benchmark[r], r);
    if (AtPair(heldout, r, s.fixed_pair)) s.has_reference_row[heldout.benchmark[r]] = true;
  }

  std::vector<PredictionRow> out;
  for (int r = 0; r < heldout.rows(); ++r) {
    if (mode == PredictMode::kFixed && !AtPair(heldout, r, s.fixed_pair) &&
        s.has_reference_row.count(heldout.benchmark[r]) > 0) {
      continue;  // the workload is predicted from its row at the reference pair
    }
    out.push_back(PredictRow(s, r, power_limit_w));
  }
  if (out.empty()) {
    throw InputError(heldout.path, 0, "f_core_mhz",
                     fmt::format("no held-out rows to predict in {} mode", PredictModeName(mode)));
  }
  return out;
}

std::string ExtrapolationWarning(const std::vector<PredictionRow>& rows) {
  std::vector<std::string> notes;
  for (const PredictionRow& row : rows) notes.push_back(row.extrapolation_note);
  return ExtrapolationWarningFromNotes(notes);
}

std::string AppsPredictionsToCsv(const std::vector<PredictionRow>& rows,
                                 const std::vector<double>& reference_pair_mhz) {
  auto at_reference = [&](const PredictionRow& row) {
    return !reference_pair_mhz.empty() && row.f_core_mhz == reference_pair_mhz[0] &&
           (reference_pair_mhz.size() < 2 || row.f_mem_mhz == reference_pair_mhz[1]);
  };
  // Per workload: its rows at the reference pair, else all of its rows.
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> all, reference;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (!all.count(rows[k].benchmark)) order.push_back(rows[k].benchmark);
    all[rows[k].benchmark].push_back(k);
    if (at_reference(rows[k])) reference[rows[k].benchmark].push_back(k);
  }
  std::string out =
      "workload,measured_w,predicted_w,uncapped_w,capped,error_pct,measured_capped,f_core_mhz,"
      "flags\n";
  for (const std::string& workload : order) {
    const std::vector<size_t>& chosen =
        reference.count(workload) ? reference[workload] : all[workload];
    // A workload measured in several windows (repeated runs, or windows of one application
    // sharing one counters export): the mean of its windows.
    double measured = 0.0, predicted = 0.0, uncapped = 0.0;
    bool capped = false, measured_capped = false;
    for (size_t k : chosen) {
      measured += rows[k].measured_w;
      predicted += rows[k].predicted_w;
      uncapped += rows[k].uncapped_w;
      capped = capped || rows[k].capped;
      measured_capped = measured_capped || rows[k].measured_capped;
    }
    const double n = static_cast<double>(chosen.size());
    measured /= n, predicted /= n, uncapped /= n;
    const PredictionRow& first = rows[chosen.front()];
    out += CsvField(workload);
    out += fmt::format(",{:.6f},{:.6f},{:.6f},{},{:.6f},{},", measured, predicted, uncapped,
                       capped ? 1 : 0, 100.0 * (predicted - measured) / measured,
                       measured_capped ? 1 : 0);
    if (std::isfinite(first.f_run_core_mhz)) out += fmt::format("{:.6g}", first.f_run_core_mhz);
    out += "," + CsvField(first.flags) + "\n";
  }
  return out;
}

}  // namespace wattcal
