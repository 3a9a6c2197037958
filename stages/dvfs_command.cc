// wattcal-dvfs: the energy-optimal core V-F pair per kernel, from predicted run times
// (wattcal-perf) and a calibrated DVFS power model (wattcal-calibrate), minimising energy, EDP
// or ED²P, optionally within a slowdown budget (CRISP, MICRO'15, §5.2).
//
//   wattcal-dvfs --model MODEL.json --activity ACT.csv --times TIMES.csv --out CHOICES.csv
//                [--objective energy|edp|ed2p] [--max-slowdown-pct 5]
//                [--power-mode dvfs|scaling] [--activity-scaling events|fixed]
//                [--perf-models crisp,crit] [--actual ACTUAL.csv] [--summary-out S.json]
//                [--curves-out CURVES.csv] [--plot-prefix P [--plot-kernels a,b] [--plot-models crisp]]
#include "commands.h"

#include "usecases/dvfs_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddDvfsOptions(CLI::App* app, DvfsStageOptions* o) {
  app->add_option("--model", o->model_path, "Power model (wattcal JSON or gpmTOOL), method dvfs")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--activity", o->activity_path,
                  "Per-kernel activity at the default pair (tidy CSV or gpmTOOL file), matched by "
                  "kernel name")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--times", o->times_path, "Predicted times (wattcal-perf --out)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_path, "Choices CSV: chosen pair, time, power, energy, savings")
      ->check(OutputFile())
      ->required();
  AddEnumOption(app, "--objective", &o->dvfs.objective,
                {DvfsObjective::kEnergy, DvfsObjective::kEdp, DvfsObjective::kEd2p},
                DvfsObjectiveName, "What to minimise: energy, edp or ed2p");
  app->add_option("--max-slowdown-pct", o->dvfs.max_slowdown_pct,
                  "Slowdown budget against the default pair, % (default: none)");
  AddEnumOption(app, "--power-mode", &o->dvfs.power_mode, {PowerMode::kDvfs, PowerMode::kScaling},
                PowerModeName,
                "dvfs: the model's power at each pair; scaling: TPDS Eq. 10 from the measured "
                "power at the default pair");
  AddEnumOption(app, "--activity-scaling", &o->dvfs.activity_scaling,
                {ActivityScaling::kEvents, ActivityScaling::kFixed}, ActivityScalingName,
                "events: utilisations follow the run time (events conserved); fixed: as measured");
  app->add_option("--perf-models", o->dvfs.perf_models,
                  "Run-time models to choose with (default: all)")
      ->delimiter(',');
  app->add_option("--actual", o->actual_path,
                  "True run times (kernel,target_mhz,actual_time_s): score the choices against the "
                  "true optimum")
      ->check(CLI::ExistingFile);
  app->add_option("--summary-out", o->summary_out_path, "Per-model summary (JSON)")
      ->check(OutputFile());
  app->add_option("--curves-out", o->curves_out_path, "Every candidate pair (CSV)")
      ->check(OutputFile());
  app->add_option("--plot-prefix", o->plot_prefix, "Figures PREFIX_<kernel>_<model>.{png,svg}");
  app->add_option("--plot-kernels", o->plot_kernels, "Kernels to draw (default: all)")
      ->delimiter(',');
  app->add_option("--plot-models", o->plot_models, "Run-time models to draw (default: the first)")
      ->delimiter(',');
  app->add_option("--default-core-mhz", o->default_core_mhz,
                  "Tidy activity: default core frequency, MHz");
  app->add_option("--default-mem-mhz", o->default_mem_mhz,
                  "Tidy activity: default memory frequency, MHz");
}

int DvfsCommand(int argc, char** argv) {
  CLI::App app{"Choose the energy-, EDP- or ED2P-optimal core V-F pair per kernel", "wattcal-dvfs"};
  DvfsStageOptions o;
  AddDvfsOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() { return RunDvfsStage(o).exit_code; });
}

}  // namespace wattcal
