#include "usecases/calibration.h"

#include <fmt/format.h>

#include "fit/identifiability.h"
#include "fit/training_rows.h"
#include "model/vf_curve.h"
#include "usecases/calibration_flags.h"
#include "util/logging.h"

namespace wattcal {

namespace {

// --method auto: the method the selected rows support and its loss (the bootstrap dropped with a
// warning for a dvfs pick).
void ResolveAutoMethod(const TrainingSelection& selection, const CalibrationRequest& request,
                       CalibrationOptions* options) {
  std::string why;
  SetFitMethod(request.loss, AutoFitMethod(selection, &why), options);
  LogInfo(why);
  if (options->bootstrap_replicates > 0 && options->method != FitMethod::kFixed) {
    LogWarning(fmt::format(
        "--bootstrap {} applies to the fixed method only: no intervals for this dvfs model",
        options->bootstrap_replicates));
    options->bootstrap_replicates = 0;
  }
}

// The rows the model cannot tell apart (identical utilisations, power apart), one note per group
// up to kMaxNamedGroups and one for the rest, each logged as a warning.
std::vector<std::string> IndistinguishableRowNotes(const Corpus& rows) {
  std::vector<std::string> notes;
  const std::vector<IndistinguishableRows> groups = FindIndistinguishableRows(rows);
  for (size_t i = 0; i < groups.size() && i < kMaxNamedGroups; ++i) {
    LogWarning(groups[i].message);
    notes.push_back(groups[i].message);
  }
  if (groups.size() > kMaxNamedGroups) {
    size_t count = 0;
    for (size_t i = kMaxNamedGroups; i < groups.size(); ++i) count += groups[i].rows.size();
    const std::string more = fmt::format(
        "and {} more groups of rows ({} rows) with identical utilisations but power more than "
        "{:.0f}% apart",
        groups.size() - kMaxNamedGroups, count, 100.0 * IdentifiabilityOptions().power_spread_frac);
    LogWarning(more);
    notes.push_back(more);
  }
  return notes;
}

}  // namespace

CalibrationResult RunCalibration(const Corpus& train, const CalibrationRequest& request) {
  CalibrationResult result;
  result.options = request.options;
  // Flagged rows (power cap, clock moved) and rows the model cannot tell apart are named before
  // the fit; both go into the model's training notes.
  const TrainingSelection selection = SelectTrainingRows(train, result.options.keep_flagged);
  if (request.auto_method) ResolveAutoMethod(selection, request, &result.options);
  if (!selection.message.empty()) LogWarning(selection.message);
  const std::vector<std::string> identifiability = IndistinguishableRowNotes(selection.rows);
  result.model = Calibrate(train, selection, result.options);
  std::vector<std::string>& notes = result.model.training_notes;
  notes.insert(notes.end(), identifiability.begin(), identifiability.end());
  // A fixed model's V-F curve from the rows the power cap held below the reference clock
  // (model/vf_curve.h), for what-ifs at other clocks and caps.
  std::string curve_note;
  result.model.vf_curve = FitVfCurveFromCappedRows(result.model, train, train.path, &curve_note);
  if (result.model.vf_curve.known()) {
    LogInfo(curve_note);
    notes.push_back(curve_note);
  }
  for (int r : selection.left_out) result.left_out_benchmarks.push_back(train.benchmark[r]);
  return result;
}

}  // namespace wattcal
