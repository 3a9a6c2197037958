// wattcal-calibrate as one library call: microbenchmark measurements -> a calibrated power
// model (TPDS Eqs. 4-6 DVFS, TPDS Eq. 9 fixed), or AccelWattch's dynamic scaling factors
// (MICRO'21 Eq. 14) from a per-kernel component table or the whole AccelWattch Eq. 12 model.
// The main (stages/calibrate_main.cc) binds the command line to CalibrateStageOptions and
// calls RunCalibrateStage; tests call it in-process.
//
// --bootstrap N (fixed method only): 95% confidence intervals of the coefficients from N
// resamples of the training benchmarks (model key coefficient_ci95).
// Rows flagged power_cap or clock_moved are left out of training unless --keep-flagged; a
// DVFS fit on one V-F pair is refused (exit 1); rows with identical utilisations but different
// power are named in a warning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "usecases/calibration.h"
#include "usecases/calibration_flags.h"
#include "usecases/stage_summary.h"

namespace wattcal {

// The library options Check() converted the flags to, once; the run converts nothing again.
struct CalibrateCheckedOptions {
  // dvfs, fixed and auto (checked as dvfs; RunCalibration sets the method auto picks and its
  // loss).
  CalibrationRequest request;
  // --default-core-mhz, --default-mem-mhz.
  CorpusReadOptions corpus;
  // accelwattch: --bounds, --orderings, --prior (read), --max-iterations.
  AccelWattchFitOptions accelwattch;
};

struct CalibrateStageOptions {
  // --train: training measurements (gpmTOOL training/real file or tidy CSV); dvfs and fixed.
  std::string train_path;
  // --components: accelwattch, a per-kernel component table.
  std::string components_path;
  // --activity, --energies, --constant, --static, --idle: the whole AccelWattch Eq. 12 model.
  std::string activity_path;
  std::string energies_path;
  std::string constant_path;
  std::string static_path;
  std::string idle_path;
  // --default-category: the category whose static model serves kernels without one.
  std::string default_category;
  // --voltage-curve: a measured core V-f curve (with --activity).
  std::string voltage_curve_path;
  // --components-out: also write the AccelWattch Eq. 13 table the fit used (with --activity).
  std::string components_out_path;
  // --out: the model file to write (JSON); required.
  std::string out_path;
  // --export-gpmtool: also write the model in gpmTOOL's format (dvfs and fixed).
  std::string export_gpmtool_path;
  // --bootstrap: fixed method, 95% intervals of the coefficients from this many resamples.
  int bootstrap = 0;
  // --seed: seed of the bootstrap resampling.
  uint64_t seed = 1;
  // --method, --solver, --loss, ... (AddCalibrationOptions).
  CalibrationFlags calibration;
  // --bounds, --orderings, --prior, ... (AddAccelWattchOptions; --method accelwattch).
  AccelWattchFlags accelwattch;

  // True when any of the whole-model inputs (--activity, --energies, ...) is given.
  bool WholeModel() const;
  // The rules between the options (--method accelwattch takes --components or the whole
  // model; --bootstrap needs --method fixed; --train is required otherwise; ...) and the
  // conversion of the flags to the library's checked options. Throws OptionError naming the
  // flag(s), or InputError for an unreadable --orderings / --prior.
  CalibrateCheckedOptions Check() const;
};

// exit_code: 0, or 3 (kExitFit) when the fit did not converge (the model is written either way).
struct CalibrateStageReport : StageSummary {
  // Whether the fit (accelwattch: the kept start) converged.
  bool converged = false;
};

// Runs wattcal-calibrate: options.Check() (once), read, fit, write every output with its manifest
// (all or none). Throws OptionError / InputError / FitError as the stage contract says.
CalibrateStageReport RunCalibrateStage(const CalibrateStageOptions& options);

}  // namespace wattcal
