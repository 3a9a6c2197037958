// wattcal-synth: a measurement corpus generated from a known truth (the embedded default run,
// tests and benchmarks use it; the full virtual GPU writing raw tool dumps grows from here).
//
//   wattcal-synth --spec microbench_specs/virtual_gpu.json --out-dir DIR [--seed N]
//   wattcal-synth --spec microbench_specs/virtual_volta.json --out-dir DIR --accelwattch-sweeps
//                 [--ubench LIST.cfg] [--f-core-levels-mhz 1447,1140,825]
#include "commands.h"

#include <iostream>

#include "usecases/synth_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddSynthOptions(CLI::App* app, SynthStageOptions* o) {
  app->add_option("--spec", o->spec_path, "Ground-truth GPU spec (JSON, see microbench_specs/)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--out-dir", o->out_dir,
                  "Folder for train_micro_dvfs.csv, train_micro_fixed.csv, "
                  "heldout_apps_dvfs.csv and truth_model.json")
      ->required();
  app->add_option("--seed", o->seed, "Random seed (same seed, same bytes)")
      ->capture_default_str()
      ->check(Seed());
  app->add_option("--noise-rel", o->noise_rel,
                  "Relative measurement noise (fraction) instead of the spec's");
  app->add_option("--corrupted-rows", o->corrupted_rows,
                  "Number of corrupted training rows instead of the spec's");
  app->add_flag("--campaign", o->campaign,
                "Write the raw dumps of a measurement campaign: DIR/{train,heldout}/power_log.csv "
                "(nvidia-smi), windows.csv (kernel launch windows), counters_ncu.csv (Nsight "
                "Compute at the default pair), and DIR/truth_model.json");
  app->add_flag(
      "--accelwattch-sweeps", o->accelwattch_sweeps,
      "With a virtual Volta spec (microbench_specs/virtual_volta.json): run its AccelWattch "
      "sweep list at every core clock and write DIR/power_log.csv (nvidia-smi), "
      "windows.csv, counters.csv (Nsight Compute raw page), sweep.csv (kernel -> "
      "benchmark, category, active SMs, lanes, clock), truth_power.csv and "
      "truth_accelwattch.json");
  app->add_option(
         "--ubench", o->ubench_path,
         "With --accelwattch-sweeps: the sweep list (ubench.cfg format) instead of the spec's")
      ->check(CLI::ExistingFile);
  app->add_option("--f-core-levels-mhz", o->f_core_levels_mhz,
                  "With --accelwattch-sweeps: the core clocks to run at, MHz, comma-separated "
                  "(instead of the spec's f_core_levels_mhz)");
}

int SynthCommand(int argc, char** argv) {
  CLI::App app{"Generate microbenchmark and application measurements from a known truth",
               "wattcal-synth"};
  SynthStageOptions o;
  AddSynthOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const SynthStageReport r = RunSynthStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
