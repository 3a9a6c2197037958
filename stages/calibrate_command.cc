// wattcal-calibrate: microbenchmark measurements -> a calibrated power model (JSON).
//
//   wattcal-calibrate --train TRAIN.csv --out MODEL.json [--method dvfs|fixed]
//                     [--solver joint|alternating] [--loss l2|huber|cauchy]
//                     [--export-gpmtool MODEL.csv] [--threads N] [--keep-flagged]
//                     [--power-limit-w W] [--bootstrap N [--seed S]]
//   wattcal-calibrate --method accelwattch --components TABLE.csv --out MODEL.json
//                     [--bounds LO:HI|NAME=LO:HI ...] [--orderings FILE] [--no-paper-orderings]
//                     [--prior MODEL.json] [--prior-weight LAMBDA]
//   wattcal-calibrate --method accelwattch --activity ACT.csv --energies E.json
//                     --constant CONSTANT.json --static STATIC.json --idle IDLE.json --out MODEL.json
//                     [--default-category CAT] [--voltage-curve VF.csv] [--components-out TABLE.csv]
#include "commands.h"

#include "usecases/calibrate_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddCalibrateOptions(CLI::App* app, CalibrateStageOptions* o) {
  app->add_option("--train", o->train_path,
                  "Training measurements (gpmTOOL training/real file or tidy CSV); "
                  "dvfs and fixed")
      ->check(CLI::ExistingFile);
  app->add_option("--components", o->components_path,
                  "accelwattch: per-kernel component powers at x = 1 and "
                  "measured power (AccelWattch per_kernel_*.csv, or tidy "
                  "kernel,measured_w,const_w,static_w,idle_w,<component>_w...)")
      ->check(CLI::ExistingFile);
  app->add_option("--activity", o->activity_path,
                  "accelwattch: kernels' activity and measured power "
                  "(wattcal-ingest --accelwattch-activity), for the whole Eq. 12 model with "
                  "--energies, --constant, "
                  "--static and --idle")
      ->check(CLI::ExistingFile);
  app->add_option(
         "--energies", o->energies_path,
         "accelwattch: initial per-event energy estimates E-hat_i "
         "(wattcal-accelwattch-energies JSON, e.g. microbench_specs/virtual_volta_energies.json)")
      ->check(CLI::ExistingFile);
  app->add_option("--constant", o->constant_path,
                  "accelwattch: wattcal-constant's output (P_const, Eq. 3)")
      ->check(CLI::ExistingFile);
  app->add_option("--static", o->static_path,
                  "accelwattch: wattcal-static's output (static power per "
                  "category, Eqs. 4-5, 9)")
      ->check(CLI::ExistingFile);
  app->add_option("--idle", o->idle_path,
                  "accelwattch: wattcal-idle's output (idle-SM power, Eqs. 6-8)")
      ->check(CLI::ExistingFile);
  app->add_option("--default-category", o->default_category,
                  "accelwattch: the category whose static model "
                  "serves kernels without one (default: none, such a kernel is an error)");
  app->add_option("--voltage-curve", o->voltage_curve_path,
                  "accelwattch with --activity: a measured core "
                  "V-f curve (CSV f_core_mhz,voltage_v or voltage_mv) instead of V ~ f (§4.2); "
                  "static power scales "
                  "with V, energy per event with V^2")
      ->check(CLI::ExistingFile);
  app->add_option("--components-out", o->components_out_path,
                  "accelwattch with --activity: also write the "
                  "per-kernel component table of Eq. 13 (tidy CSV, x = 1) that the fit used")
      ->check(OutputFile());
  app->add_option("--out", o->out_path, "Model file to write (JSON)")
      ->check(OutputFile())
      ->required();
  app->add_option("--export-gpmtool", o->export_gpmtool_path,
                  "Also write the model in gpmTOOL's format")
      ->check(OutputFile());
  app->add_option(
         "--bootstrap", o->bootstrap,
         "--method fixed: bootstrap 95% confidence intervals of the "
         "coefficients from N resamples (with replacement) of the training benchmarks, all "
         "rows of a "
         "benchmark together; 2.5%/97.5% percentiles interpolated linearly between order "
         "statistics (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--seed", o->seed,
                  "Seed of the --bootstrap resampling (replicate b uses mt19937_64 seeded "
                  "from the seed and b: identical for any --threads)")
      ->capture_default_str()
      ->check(Seed());
  AddCalibrationOptions(app, &o->calibration);
  AddAccelWattchOptions(app, &o->accelwattch);
}

int CalibrateCommand(int argc, char** argv) {
  CLI::App app{"Calibrate a GPU power model from microbenchmark measurements (TPDS Eqs. 4-6, 9)",
               "wattcal-calibrate"};
  CalibrateStageOptions o;
  AddCalibrateOptions(&app, &o);
  AddLoggingOptions(&app);
  return RunStageMain(&app, argc, argv, [&] {
    auto r = RunCalibrateStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
