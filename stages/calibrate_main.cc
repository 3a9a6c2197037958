// wattcal-calibrate: microbenchmark measurements -> a calibrated power model (JSON).
//
//   wattcal-calibrate --train TRAIN.csv --out MODEL.json [--method dvfs|fixed]
//                     [--solver joint|alternating] [--loss l2|huber|cauchy]
//                     [--export-gpmtool MODEL.csv] [--threads N] [--keep-flagged]
//                     [--power-limit-w W] [--bootstrap N [--seed S]]
// --bootstrap N (fixed method only): 95% confidence intervals of the coefficients from N
// resamples of the training benchmarks (model key coefficient_ci95).
// Rows flagged power_cap or clock_moved are left out of training unless --keep-flagged; a
// DVFS fit on one V-F pair is refused (exit 1); rows with identical utilisations but different
// power are named in a warning.
//   wattcal-calibrate --method accelwattch --components TABLE.csv --out MODEL.json
//                     [--bounds LO:HI|NAME=LO:HI ...] [--orderings FILE] [--no-paper-orderings]
//                     [--prior MODEL.json] [--prior-weight LAMBDA]
//   wattcal-calibrate --method accelwattch --activity ACT.csv --energies E.json
//                     --constant CONSTANT.json --static STATIC.json --idle IDLE.json --out MODEL.json
//                     [--default-category CAT] [--voltage-curve VF.csv] [--components-out TABLE.csv]
//                     [fit options as above]
#include <fmt/format.h>

#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_fit.h"
#include "accelwattch/scaling_model.h"

#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "model/model_summary.h"
#include "report/collinearity.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Calibrate a GPU power model from microbenchmark measurements (TPDS Eqs. 4-6, 9)",
               "wattcal-calibrate"};
  std::string train_path, components_path, out_path, gpmtool_path;
  std::string activity_path, energies_path, constant_path, static_path, idle_path, default_category,
      components_out_path, voltage_curve_path;
  CalibrationFlags flags;
  AccelWattchFlags accelwattch;
  int bootstrap = 0;
  uint64_t seed = 1;
  app.add_option("--train", train_path,
                 "Training measurements (gpmTOOL training/real file or tidy CSV); dvfs and fixed")
      ->check(CLI::ExistingFile);
  app.add_option("--components", components_path,
                 "accelwattch: per-kernel component powers at x = 1 and measured power "
                 "(AccelWattch per_kernel_*.csv, or tidy kernel,measured_w,const_w,static_w,"
                 "idle_w,<component>_w...)")
      ->check(CLI::ExistingFile);
  app.add_option("--activity", activity_path,
                 "accelwattch: kernels' activity and measured power (wattcal-ingest "
                 "--accelwattch-activity), for the whole Eq. 12 model with --energies, --constant, "
                 "--static and --idle")
      ->check(CLI::ExistingFile);
  app.add_option("--energies", energies_path,
                 "accelwattch: initial per-event energy estimates E-hat_i (wattcal-accelwattch-energies "
                 "JSON, e.g. microbench_specs/virtual_volta_energies.json)")
      ->check(CLI::ExistingFile);
  app.add_option("--constant", constant_path, "accelwattch: wattcal-constant's output (P_const, Eq. 3)")
      ->check(CLI::ExistingFile);
  app.add_option("--static", static_path,
                 "accelwattch: wattcal-static's output (static power per category, Eqs. 4-5, 9)")
      ->check(CLI::ExistingFile);
  app.add_option("--idle", idle_path, "accelwattch: wattcal-idle's output (idle-SM power, Eqs. 6-8)")
      ->check(CLI::ExistingFile);
  app.add_option("--default-category", default_category,
                 "accelwattch: the category whose static model serves kernels without one "
                 "(default: none, such a kernel is an error)");
  app.add_option("--voltage-curve", voltage_curve_path,
                 "accelwattch with --activity: a measured core V-f curve (CSV f_core_mhz,voltage_v or "
                 "voltage_mv) instead of V ~ f (§4.2); static power scales with V, energy per event with V^2")
      ->check(CLI::ExistingFile);
  app.add_option("--components-out", components_out_path,
                 "accelwattch with --activity: also write the per-kernel component table of Eq. 13 "
                 "(tidy CSV, x = 1) that the fit used")->check(OutputFile());
  app.add_option("--out", out_path, "Model file to write (JSON)")->check(OutputFile())->required();
  app.add_option("--export-gpmtool", gpmtool_path, "Also write the model in gpmTOOL's format")
      ->check(OutputFile());
  app.add_option("--bootstrap", bootstrap,
                 "--method fixed: bootstrap 95% confidence intervals of the coefficients from N "
                 "resamples (with replacement) of the training benchmarks, all rows of a "
                 "benchmark together; 2.5%/97.5% percentiles interpolated linearly between order "
                 "statistics (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", seed,
                 "Seed of the --bootstrap resampling (replicate b uses mt19937_64 seeded from the "
                 "seed and b: identical for any --threads)")
      ->capture_default_str();
  AddCalibrationOptions(&app, &flags);
  AddAccelWattchOptions(&app, &accelwattch);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const bool whole_model = !activity_path.empty() || !energies_path.empty() || !constant_path.empty() ||
                             !static_path.empty() || !idle_path.empty() || !default_category.empty() ||
                             !components_out_path.empty() || !voltage_curve_path.empty();
    if (bootstrap > 0 && flags.method != "fixed") {
      throw OptionError(fmt::format("--bootstrap {} applies to --method fixed only (got --method {})",
                                    bootstrap, flags.method));
    }
    if (flags.method == "accelwattch") {
      if (!train_path.empty() || !gpmtool_path.empty()) {
        throw OptionError("--method accelwattch takes --components TABLE.csv, or --activity with "
                          "--energies, --constant, --static and --idle (not --train, not --export-gpmtool)");
      }
      if (whole_model == !components_path.empty()) {
        throw OptionError("--method accelwattch takes either --components TABLE.csv (a per-kernel "
                          "component table) or --activity ACT.csv --energies E.json --constant C.json "
                          "--static S.json --idle I.json (the whole Eq. 12 model)");
      }
      if (whole_model && (activity_path.empty() || energies_path.empty() || constant_path.empty() ||
                          static_path.empty() || idle_path.empty())) {
        throw OptionError("--activity needs all of --energies, --constant, --static and --idle");
      }
      const AccelWattchFitOptions options = ToAccelWattchFitOptions(accelwattch, flags.max_iterations);
      std::vector<std::string> inputs;
      ComponentTable table;
      AccelWattchEnergies energies;
      AccelWattchFixedTerms fixed;
      if (whole_model) {
        energies = ReadAccelWattchEnergies(energies_path);
        fixed = ReadAccelWattchFixedTerms(constant_path, static_path, idle_path, default_category);
        if (!voltage_curve_path.empty()) ReadVoltageCurve(voltage_curve_path, &fixed);
        const ActivityTable activity = ReadActivityTable(activity_path);
        table = BuildComponentTable(activity, energies, fixed);
        inputs = {activity_path, energies_path, constant_path, static_path, idle_path};
        if (!voltage_curve_path.empty()) inputs.push_back(voltage_curve_path);
        LogInfo(fmt::format("built the Eq. 13 table: {} kernels x {} components from {} (P_const {:.3f} W, "
                            "{} static categories, idle SM {:.4f} W)",
                            table.num_kernels(), table.num_components(), activity_path, fixed.p_const_w,
                            fixed.categories.size(), fixed.p_idle_sm_w));
      } else {
        table = ReadComponentTable(components_path);
        inputs = {components_path};
        LogInfo(fmt::format("read {} kernels x {} components from {}", table.num_kernels(),
                            table.num_components(), components_path));
      }
      AccelWattchModel model = FitAccelWattchScaling(table, options);
      if (whole_model) {
        model.has_terms = true;
        model.energies = energies;
        model.fixed = fixed;
      }
      OutputSet outputs;
      for (const std::string& f : AccelWattchInputFiles(accelwattch)) inputs.push_back(f);
      nlohmann::json manifest_options = {
          {"method", "accelwattch"},
          {"accelwattch", AccelWattchFitOptionsToJson(options, accelwattch)}};
      if (whole_model) manifest_options["default_category"] = default_category;
      outputs.StageText(out_path, AccelWattchModelToJson(model));
      outputs.StageManifest(out_path, "calibrate", inputs, manifest_options);
      if (!components_out_path.empty()) {
        outputs.StageText(components_out_path, ComponentTableToTidyCsv(table));
        outputs.StageManifest(components_out_path, "calibrate", inputs, manifest_options);
      }
      outputs.Commit();
      LogInfo(FormatAccelWattchModelSummary(model));
      LogInfo("wrote " + out_path);
      if (!model.fit.converged) {
        for (const AccelWattchStartReport& start : model.fit.starts) {
          if (start.name != model.fit.kept_start) continue;
          LogWarning("the kept start did not converge: " + start.termination +
                     " (the model was written and records this)");
        }
        return static_cast<int>(kExitFit);
      }
      return static_cast<int>(kExitOk);
    }
    if (train_path.empty()) {
      throw OptionError("--train is required (or --method accelwattch with --components)");
    }
    if (!components_path.empty() || whole_model || AccelWattchFlagsGiven(accelwattch)) {
      throw OptionError("--components, --activity, --energies, --constant, --static, --idle, "
                        "--default-category, --voltage-curve, --components-out, --bounds, --orderings, --prior and "
                        "--prior-weight belong to --method accelwattch");
    }
    CalibrationOptions options = ToCalibrationOptions(flags);
    options.bootstrap_replicates = bootstrap;
    options.bootstrap_seed = seed;
    const Corpus train = ReadCorpus(train_path, ToCorpusReadOptions(flags));
    LogInfo(fmt::format("read {} rows ({} benchmarks) from {}", train.rows(),
                        train.Benchmarks().size(), train_path));
    // Flagged rows (power cap, clock moved) and rows the model cannot tell apart are named
    // before the fit; both go into the model's training notes.
    const TrainingSelection selection = SelectTrainingRows(train, options.keep_flagged);
    if (!selection.message.empty()) LogWarning(selection.message);
    std::vector<std::string> identifiability;
    for (const IndistinguishableRows& g : FindIndistinguishableRows(selection.rows)) {
      LogWarning(g.message);
      identifiability.push_back(g.message);
    }
    PowerModel model = Calibrate(train, options);
    model.training_notes.insert(model.training_notes.end(), identifiability.begin(),
                                identifiability.end());

    OutputSet outputs;
    nlohmann::json manifest_options = CalibrationOptionsToJson(options);
    manifest_options["threads"] = options.num_threads;
    if (bootstrap > 0) {
      manifest_options["bootstrap_replicates"] = bootstrap;
      manifest_options["seed"] = seed;
    }
    std::vector<std::string> left_out;
    for (int r : selection.left_out) left_out.push_back(train.benchmark[r]);
    manifest_options["left_out_flagged_rows"] = left_out;
    manifest_options["training_notes"] = model.training_notes;
    outputs.StageText(out_path, ModelToJson(model));
    outputs.StageManifest(out_path, "calibrate", {train_path}, manifest_options);
    if (!gpmtool_path.empty()) {
      outputs.StageText(gpmtool_path, ModelToGpmtoolCsv(model));
      outputs.StageManifest(gpmtool_path, "calibrate", {train_path}, manifest_options);
    }
    outputs.Commit();
    LogInfo(FormatModelSummary(model));
    LogInfo("wrote " + out_path + (gpmtool_path.empty() ? "" : " and " + gpmtool_path));
    if (!model.fit.converged) {
      LogWarning("the fit did not converge: " + model.fit.termination +
                 " (the model was written and records this)");
      return static_cast<int>(kExitFit);
    }
    return static_cast<int>(kExitOk);
  });
}
