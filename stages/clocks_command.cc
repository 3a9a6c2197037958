// wattcal-clocks: power (and run time) per workload at locked core clocks, no counters -> the
// voltage-frequency curve (TPDS'19 Eqs. 4-6 with one unknown activity per workload), power at
// every clock from one measured clock, the energy-optimal clock, the constant power from an
// idle curve; each judged by cross-validation by workload, with the report.
//
//   wattcal-clocks --runs RUNS.csv --out-dir DIR [--anchor-mhz F] [--time-clocks F1,F2]
//                  [--power-limit-w W] [--idle IDLE.json] [--measured-voltage FILE]
//                  [--predict NEW.csv] [--reference-mhz F] [--folds 5] [--seed 1]
// RUNS.csv: workload,f_core_mhz,power_w (or energy_j and time_s), EnergAIzer's NVML table or
// the nsfcac DCGM means; see pipeline/io/clock_runs.h.
#include "commands.h"

#include <iostream>

#include "usecases/clocks_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddClocksOptions(CLI::App* app, ClocksStageOptions* o) {
  app->add_option(
         "--runs", o->runs_paths,
         "Per-run table: workload,f_core_mhz,power_w (or energy_j,time_s; units by suffix), "
         "EnergAIzer's workload,energy,time,avg_freq, or nsfcac's application,sm_app_clock,"
         "power_usage,run_time; repeatable (one file per workload)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--out-dir", o->out_dir, "Folder of the run's tables, figures and report")
      ->required();
  app->add_option("--title", o->title, "Heading of the report (default: the folder's name)");
  app->add_option(
      "--anchor-mhz", o->cv.anchor_mhz,
      "The one clock a held-out workload is measured at (default: the requested clock nearest "
      "the middle of the range)");
  app->add_option(
         "--time-clocks", o->cv.time_clocks_mhz,
         "Two requested clocks whose run times give T(f) = t_mem + c/f: enables the energy-optimal "
         "clock choice")
      ->delimiter(',')
      ->expected(2);
  app->add_option("--power-limit-w", o->cv.fit.power_limit_w,
                  "The board's power limit: above it the clock the limit holds is predicted");
  app->add_option("--reference-mhz", o->cv.fit.reference_mhz,
                  "Clock where v = 1 (default: the highest requested)");
  AddEnumOption(app, "--fit-residuals", &o->cv.fit.residuals,
                {VfResiduals::kRelative, VfResiduals::kAbsolute}, VfResidualsName,
                "What the fit minimises: absolute (plain least squares in W) or relative (each "
                "run's error over its power, which gives light runs more weight)");
  app->add_option("--voltage-min", o->cv.fit.voltage_min, "Lower bound of the relative voltage")
      ->capture_default_str();
  app->add_option("--voltage-max", o->cv.fit.voltage_max, "Upper bound of the relative voltage")
      ->capture_default_str();
  app->add_option("--folds", o->cv.folds, "Cross-validation folds (by workload)")
      ->capture_default_str();
  app->add_option("--seed", o->cv.seed, "Seed of the workload shuffle that assigns folds")
      ->capture_default_str();
  app->add_option("--idle", o->idle_path,
                  "Idle power at locked clocks ({\"MHz\": W} JSON or CSV f_core_mhz,power_w): the "
                  "constant power")
      ->check(CLI::ExistingFile);
  app->add_option(
         "--measured-voltage", o->measured_voltage_path,
         "The GPU's measured core voltage (nvidia-smi -q -d VOLTAGE,CLOCK at each locked clock, "
         "concatenated, or CSV f_core_mhz,voltage_mv), drawn beside the estimate")
      ->check(CLI::ExistingFile);
  app->add_option("--predict", o->predict_path,
                  "New workloads measured at one clock (same table shapes): their power at every "
                  "calibrated clock")
      ->check(CLI::ExistingFile);
  app->add_flag_callback(
      "--no-figures", [o] { o->figures = false; },
      "Write the tables and the index without figures");
}

int ClocksCommand(int argc, char** argv) {
  CLI::App app{
      "Calibrate the voltage-frequency curve from power at locked clocks (no counters), predict "
      "power at every clock from one, and choose the energy-optimal clock",
      "wattcal-clocks"};
  ClocksStageOptions o;
  AddClocksOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const ClocksStageReport r = RunClocksStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
