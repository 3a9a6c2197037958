#include "usecases/calibrate_stage.h"

#include <fmt/format.h>

#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_fit.h"
#include "accelwattch/scaling_model.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "model/model_summary.h"
#include "util/errors.h"
#include "util/logging.h"
#include "usecases/calibration.h"
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
  CalibrationOptions& options = checked.request.options;
  options = ToCalibrationOptions(calibration);  // throws OptionError naming the flag
  options.bootstrap_replicates = bootstrap;
  options.bootstrap_seed = seed;
  checked.request.auto_method = method == CalibrationMethod::kAuto;
  checked.request.loss = calibration.loss;
  checked.corpus = ToCorpusReadOptions(calibration);
  return checked;
}

namespace {

// The AccelWattch Eq. 13 table --method accelwattch fits: read (--components) or built from the
// inputs of the whole AccelWattch Eq. 12 model (--activity, --energies, ...; their terms into
// *energies and *fixed); the files read go to *inputs.
ComponentTable ReadAccelWattchTable(const CalibrateStageOptions& o, AccelWattchEnergies* energies,
                                    AccelWattchFixedTerms* fixed,
                                    std::vector<std::string>* inputs) {
  if (!o.WholeModel()) {
    ComponentTable table = ReadComponentTable(o.components_path);
    *inputs = {o.components_path};
    LogInfo(fmt::format("read {} kernels x {} components from {}", table.num_kernels(),
                        table.num_components(), o.components_path));
    return table;
  }
  *energies = ReadAccelWattchEnergies(o.energies_path);
  *fixed =
      ReadAccelWattchFixedTerms(o.constant_path, o.static_path, o.idle_path, o.default_category);
  if (!o.voltage_curve_path.empty()) ReadVoltageCurve(o.voltage_curve_path, fixed);
  const ActivityTable activity = ReadActivityTable(o.activity_path);
  ComponentTable table = BuildComponentTable(activity, *energies, *fixed);
  *inputs = {o.activity_path, o.energies_path, o.constant_path, o.static_path, o.idle_path};
  if (!o.voltage_curve_path.empty()) inputs->push_back(o.voltage_curve_path);
  LogInfo(
      fmt::format("built the Eq. 13 table: {} kernels x {} components from {} (P_const {:.3f} W, "
                  "{} static categories, idle SM {:.4f} W)",
                  table.num_kernels(), table.num_components(), o.activity_path, fixed->p_const_w,
                  fixed->categories.size(), fixed->p_idle_sm_w));
  return table;
}

CalibrateStageReport RunAccelWattch(const CalibrateStageOptions& o,
                                    const AccelWattchFitOptions& options) {
  const bool whole_model = o.WholeModel();
  std::vector<std::string> inputs;
  AccelWattchEnergies energies;
  AccelWattchFixedTerms fixed;
  const ComponentTable table = ReadAccelWattchTable(o, &energies, &fixed, &inputs);
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

// The manifest's options: the effective calibration, the left-out rows and the training notes.
nlohmann::json CalibrationManifest(const CalibrationResult& result) {
  const CalibrationOptions& options = result.options;
  nlohmann::json manifest = options;
  manifest["threads"] = options.threads;
  if (options.bootstrap_replicates > 0) {
    manifest["bootstrap_replicates"] = options.bootstrap_replicates;
    manifest["seed"] = options.bootstrap_seed;
  }
  manifest["left_out_flagged_rows"] = result.left_out_benchmarks;
  manifest["training_notes"] = result.model.training_notes;
  return manifest;
}

}  // namespace

CalibrateStageReport RunCalibrateStage(const CalibrateStageOptions& o) {
  const CalibrateCheckedOptions checked = o.Check();
  if (o.calibration.method == CalibrationMethod::kAccelWattch) {
    return RunAccelWattch(o, checked.accelwattch);
  }
  const Corpus train = ReadCorpus(o.train_path, checked.corpus);
  LogInfo(fmt::format("read {} rows ({} benchmarks) from {}", train.rows(),
                      train.Benchmarks().size(), o.train_path));
  const CalibrationResult result = RunCalibration(train, checked.request);
  const PowerModel& model = result.model;

  CalibrateStageReport report;
  OutputSet outputs;
  const nlohmann::json manifest_options = CalibrationManifest(result);
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
