// wattcal-validate as one library call: predictions vs. held-out measurements, k-fold
// cross-validation by benchmark, or AccelWattch's per-kernel tables (MICRO'21 Eqs. 12-14).
// The main (stages/validate_main.cc) binds the command line to ValidateStageOptions and calls
// RunValidateStage; tests call it in-process.
//
// --mode and --method: --mode says what is validated, i.e. how the held-out rows are
// predicted (dvfs TPDS §4.3, fixed TPDS §4.2, scaling TPDS Eq. 10, accelwattch). --method is
// the calibration method of each fold with --cv-folds only, and defaults from --mode (fixed
// for --mode fixed, else dvfs). Check() refuses --method without --cv-folds and the pairs that
// contradict each other (--method fixed with --mode dvfs or scaling: a fixed model,
// TPDS Eq. 9, has no voltages to predict other V-F pairs with; --method accelwattch).
#pragma once

#include <string>
#include <vector>

#include "usecases/calibration_flags.h"
#include "usecases/stage_summary.h"
#include "validate/prediction.h"

namespace wattcal {

// --mode: what is validated, i.e. how the held-out rows are predicted (the first three are
// PredictMode's), accelwattch (per-kernel tables) or auto (fixed for a fixed model or a
// one-pair --cv-folds corpus, else dvfs).
enum class ValidateMode { kDvfs, kFixed, kScaling, kAccelWattch, kAuto };
// "dvfs" | "fixed" | "scaling" | "accelwattch" | "auto", the names --mode takes.
const char* ValidateModeName(ValidateMode mode);
// Every mode, in the order --help lists them.
const std::vector<ValidateMode>& ValidateModes();

// The library options Check() converted the flags to, once; the run converts nothing again.
struct ValidateCheckedOptions {
  // --mape-ci (ValidateStageOptions::metrics, as given).
  MetricsOptions metrics;
  // --default-core/mem-mhz (every mode but accelwattch).
  CorpusReadOptions corpus;
  // --mode dvfs | fixed | scaling (kDvfs for accelwattch and auto, which pick their own).
  PredictMode predict_mode = PredictMode::kDvfs;
  // --cv-folds with the mode known: each fold's calibration (FoldCalibration() converted).
  CalibrationOptions folds;
  // --mode accelwattch --cv loko: the re-estimation's fit (--bounds, --orderings, --prior read).
  AccelWattchFitOptions accelwattch;
};

struct ValidateStageOptions {
  // --model: the model to validate (wattcal JSON, gpmTOOL model, AccelWattch model).
  std::string model_path;
  // --heldout: held-out measurements (or, --mode accelwattch, a component/activity table).
  std::string heldout_path;
  // --train: cross-validation, the measurements to split by benchmark.
  std::string train_path;
  // --components: accelwattch, a per-kernel component table.
  std::string components_path;
  // --cv: accelwattch, "loko" (leave-one-kernel-out) or "".
  std::string cv;
  // --cv-folds: number of folds (0 = no cross-validation).
  int cv_folds = 0;
  // --cv-seed: seed of the fold assignment.
  unsigned cv_seed = 1;
  // --mode; required on the command line.
  ValidateMode mode = ValidateMode::kDvfs;
  // --predictions, --metrics: required outputs.
  std::string predictions_path;
  std::string metrics_path;
  // --apps-predictions, --plot (.png, an .svg twin beside it), --summary-md: optional outputs.
  std::string apps_predictions_path;
  std::string plot_path;
  std::string summary_md_path;
  // --plot also draws the per-workload error chart, PLOT_workloads.png (--no-workload-plot: not).
  bool workload_plot = true;
  // --truth-model: synthetic data's true model.
  std::string truth_model_path;
  // --title of the terminal table, figure and summary.
  std::string title;
  // --max-mape-pct: exit 3 above this MAPE (0 = no threshold).
  double max_mape_pct = 0.0;
  // --mape-ci: the MAPE confidence interval (student-t | normal-population-sd).
  MetricsOptions metrics;
  // --method, --solver, --loss, ... (AddCalibrationOptions): the folds' calibration.
  CalibrationFlags calibration;
  // Whether --method was given (else it follows --mode; see above).
  bool method_given = false;
  // --bounds, --orderings, --prior, ... (--mode accelwattch --cv loko).
  AccelWattchFlags accelwattch;

  // The folds' calibration flags: `calibration` with the method --mode implies unless
  // --method was given.
  CalibrationFlags FoldCalibration() const;
  // Every rule between the options, and the conversion of the flags to the library's options
  // (for --mode auto, what does not depend on the mode it picks: the run checks the folds' once
  // it is picked); throws OptionError naming the flag(s).
  ValidateCheckedOptions Check() const;
};

// exit_code: 0, or 3 (kExitFit) when the MAPE exceeds max_mape_pct (the outputs are written).
struct ValidateStageReport : StageSummary {
  // The overall MAPE, %.
  double mape_pct = 0.0;
};

ValidateStageReport RunValidateStage(const ValidateStageOptions& options);

}  // namespace wattcal
