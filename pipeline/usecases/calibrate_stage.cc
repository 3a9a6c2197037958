#include "usecases/calibrate_stage.h"

#include <fmt/format.h>

#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_fit.h"
#include "accelwattch/scaling_model.h"
#include "fit/calibrate.h"
#include "fit/identifiability.h"
#include "fit/training_rows.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "model/vf_curve.h"
#include "model/model_summary.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

namespace {
constexpr int kMaxBootstrap = 100000;
}  // namespace

bool CalibrateStageOptions::WholeModel() const {
  return !activity_path.empty() || !energies_path.empty() || !constant_path.empty() ||
         !static_path.empty() || !idle_path.empty() || !default_category.empty() ||
         !components_out_path.empty() || !voltage_curve_path.empty();
}

CalibrateCheckedOptions CalibrateStageOptions::Check() const {
  CalibrateCheckedOptions checked;
  if (out_path.empty()) throw OptionError("--out is required");
  const bool whole_model = WholeModel();
  // 0 = none; 2 resamples at least (one gives a zero-width "interval"), at most 100000 (each
  // resample refits the model; the interval's percentiles are stable long before).
  if (bootstrap < 0 || bootstrap == 1 || bootstrap > kMaxBootstrap) {
    throw OptionError(
        fmt::format("--bootstrap = {} must be 0 (no intervals) or in [2, {}] resamples", bootstrap,
                    kMaxBootstrap));
  }
  const CalibrationMethod method = calibration.method;
  if (bootstrap > 0 && method != CalibrationMethod::kFixed && method != CalibrationMethod::kAuto) {
    throw OptionError(fmt::format("--bootstrap {} applies to --method fixed only (got --method {})",
                                  bootstrap, CalibrationMethodName(method)));
  }
  if (method == CalibrationMethod::kAccelWattch) {
    if (!train_path.empty() || !export_gpmtool_path.empty()) {
      throw OptionError(
          "--method accelwattch takes --components TABLE.csv, or --activity with "
          "--energies, --constant, --static and --idle (not --train, not --export-gpmtool)");
    }
    if (whole_model == !components_path.empty()) {
      throw OptionError(
          "--method accelwattch takes either --components TABLE.csv (a per-kernel "
          "component table) or --activity ACT.csv --energies E.json --constant C.json "
          "--static S.json --idle I.json (the whole Eq. 12 model)");
    }
    if (whole_model && (activity_path.empty() || energies_path.empty() || constant_path.empty() ||
                        static_path.empty() || idle_path.empty())) {
      throw OptionError("--activity needs all of --energies, --constant, --static and --idle");
    }
    checked.accelwattch = ToAccelWattchFitOptions(accelwattch, calibration.options.max_iterations);
    return checked;
  }
  if (train_path.empty()) {
    throw OptionError("--train is required (or --method accelwattch with --components)");
  }
  if (!components_path.empty() || whole_model || AccelWattchFlagsGiven(accelwattch)) {
    throw OptionError(
        "--components, --activity, --energies, --constant, --static, --idle, "
        "--default-category, --voltage-curve, --components-out, --bounds, --orderings, --prior and "
        "--prior-weight belong to --method accelwattch");
  }
  checked.calibration = ToCalibrationOptions(calibration);  // throws OptionError naming the flag
  checked.calibration.bootstrap_replicates = bootstrap;
  checked.calibration.bootstrap_seed = seed;
  checked.corpus = ToCorpusReadOptions(calibration);
  return checked;
}

namespace {

CalibrateStageReport RunAccelWattch(const CalibrateStageOptions& o,
                                    const AccelWattchFitOptions& options) {
  const bool whole_model = o.WholeModel();
  std::vector<std::string> inputs;
  ComponentTable table;
  AccelWattchEnergies energies;
  AccelWattchFixedTerms fixed;
  if (whole_model) {
    energies = ReadAccelWattchEnergies(o.energies_path);
    fixed =
        ReadAccelWattchFixedTerms(o.constant_path, o.static_path, o.idle_path, o.default_category);
    if (!o.voltage_curve_path.empty()) ReadVoltageCurve(o.voltage_curve_path, &fixed);
    const ActivityTable activity = ReadActivityTable(o.activity_path);
    table = BuildComponentTable(activity, energies, fixed);
    inputs = {o.activity_path, o.energies_path, o.constant_path, o.static_path, o.idle_path};
    if (!o.voltage_curve_path.empty()) inputs.push_back(o.voltage_curve_path);
    LogInfo(
        fmt::format("built the Eq. 13 table: {} kernels x {} components from {} (P_const {:.3f} W, "
                    "{} static categories, idle SM {:.4f} W)",
                    table.num_kernels(), table.num_components(), o.activity_path, fixed.p_const_w,
                    fixed.categories.size(), fixed.p_idle_sm_w));
  } else {
    table = ReadComponentTable(o.components_path);
    inputs = {o.components_path};
    LogInfo(fmt::format("read {} kernels x {} components from {}", table.num_kernels(),
                        table.num_components(), o.components_path));
  }
  AccelWattchModel model = FitAccelWattchScaling(table, options);
  if (whole_model) {
    model.has_terms = true;
    model.energies = energies;
    model.fixed = fixed;
  }
  CalibrateStageReport report;
  OutputSet outputs;
  for (const std::string& f : AccelWattchInputFiles(o.accelwattch)) inputs.push_back(f);
  nlohmann::json manifest_options = {
      {"method", "accelwattch"},
      {"accelwattch", AccelWattchFitOptionsToJson(options, o.accelwattch)}};
  if (whole_model) manifest_options["default_category"] = o.default_category;
  outputs.StageText(o.out_path, AccelWattchModelToJson(model));
  outputs.StageProvenance(o.out_path, "calibrate", inputs, manifest_options, "model");
  if (!o.components_out_path.empty()) {
    outputs.StageText(o.components_out_path, ComponentTableToTidyCsv(table));
    outputs.StageProvenance(o.components_out_path, "calibrate", inputs, manifest_options,
                            "components");
  }
  outputs.Commit();
  report.written = outputs.Outputs();
  LogInfo(FormatAccelWattchModelSummary(model));
  LogInfo("wrote " + o.out_path);
  report.converged = model.fit.converged;
  if (!model.fit.converged) {
    for (const AccelWattchStartReport& start : model.fit.starts) {
      if (start.name != model.fit.kept_start) continue;
      LogWarning("the kept start did not converge: " + start.termination +
                 " (the model was written and records this)");
    }
    report.exit_code = static_cast<int>(kExitFit);
  }
  return report;
}

}  // namespace

CalibrateStageReport RunCalibrateStage(const CalibrateStageOptions& o) {
  const CalibrateCheckedOptions checked = o.Check();
  if (o.calibration.method == CalibrationMethod::kAccelWattch) {
    return RunAccelWattch(o, checked.accelwattch);
  }
  CalibrationOptions options = checked.calibration;
  const Corpus train = ReadCorpus(o.train_path, checked.corpus);
  if (o.calibration.method == CalibrationMethod::kAuto) {
    std::string why;
    SetFitMethod(o.calibration, AutoFitMethod(train, options.keep_flagged, &why), &options);
    LogInfo(why);
    if (options.bootstrap_replicates > 0 && options.method != FitMethod::kFixed) {
      LogWarning(fmt::format(
          "--bootstrap {} applies to the fixed method only: no intervals for this dvfs model",
          options.bootstrap_replicates));
      options.bootstrap_replicates = 0;
    }
  }
  LogInfo(fmt::format("read {} rows ({} benchmarks) from {}", train.rows(),
                      train.Benchmarks().size(), o.train_path));
  // Flagged rows (power cap, clock moved) and rows the model cannot tell apart are named
  // before the fit; both go into the model's training notes.
  const TrainingSelection selection = SelectTrainingRows(train, options.keep_flagged);
  if (!selection.message.empty()) LogWarning(selection.message);
  std::vector<std::string> identifiability;
  // Named one by one up to kMaxNamedGroups; a corpus of repeated campaigns can have thousands.
  constexpr size_t kMaxNamedGroups = 10;
  const std::vector<IndistinguishableRows> groups = FindIndistinguishableRows(selection.rows);
  for (size_t i = 0; i < groups.size() && i < kMaxNamedGroups; ++i) {
    LogWarning(groups[i].message);
    identifiability.push_back(groups[i].message);
  }
  if (groups.size() > kMaxNamedGroups) {
    size_t rows = 0;
    for (size_t i = kMaxNamedGroups; i < groups.size(); ++i) rows += groups[i].rows.size();
    const std::string more = fmt::format(
        "and {} more groups of rows ({} rows) with identical utilisations but power more than "
        "{:.0f}% apart",
        groups.size() - kMaxNamedGroups, rows, 100.0 * IdentifiabilityOptions().power_spread_frac);
    LogWarning(more);
    identifiability.push_back(more);
  }
  PowerModel model = Calibrate(train, options);
  model.training_notes.insert(model.training_notes.end(), identifiability.begin(),
                              identifiability.end());
  // A fixed model's V-F curve from the rows the power cap held below the reference clock
  // (model/vf_curve.h), for what-ifs at other clocks and caps.
  std::string curve_note;
  model.vf_curve = FitVfCurveFromCappedRows(model, train, o.train_path, &curve_note);
  if (model.vf_curve.known()) {
    LogInfo(curve_note);
    model.training_notes.push_back(curve_note);
  }

  CalibrateStageReport report;
  OutputSet outputs;
  nlohmann::json manifest_options = options;
  manifest_options["threads"] = options.threads;
  if (options.bootstrap_replicates > 0) {
    manifest_options["bootstrap_replicates"] = options.bootstrap_replicates;
    manifest_options["seed"] = options.bootstrap_seed;
  }
  std::vector<std::string> left_out;
  for (int r : selection.left_out) left_out.push_back(train.benchmark[r]);
  manifest_options["left_out_flagged_rows"] = left_out;
  manifest_options["training_notes"] = model.training_notes;
  outputs.StageText(o.out_path, ModelToJson(model));
  outputs.StageProvenance(o.out_path, "calibrate", {o.train_path}, manifest_options, "model");
  if (!o.export_gpmtool_path.empty()) {
    outputs.StageText(o.export_gpmtool_path, ModelToGpmtoolCsv(model));
    outputs.StageProvenance(o.export_gpmtool_path, "calibrate", {o.train_path}, manifest_options,
                            "gpmtool_model");
  }
  outputs.Commit();
  report.written = outputs.Outputs();
  LogInfo(FormatModelSummary(model));
  LogInfo("wrote " + o.out_path +
          (o.export_gpmtool_path.empty() ? "" : " and " + o.export_gpmtool_path));
  report.converged = model.fit.converged;
  if (!model.fit.converged) {
    LogWarning("the fit did not converge: " + model.fit.termination +
               " (the model was written and records this)");
    report.exit_code = static_cast<int>(kExitFit);
  }
  return report;
}

}  // namespace wattcal
