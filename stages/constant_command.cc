// wattcal-constant: DVFS sweeps of microbenchmarks -> constant power P_const (AccelWattch Eq. 3,
// one P_const shared by every curve) with its confidence interval, each curve's fit, and the
// GPUWattch-style linear extrapolation beside it.
//
//   wattcal-constant --sweep SWEEP.csv [--description SWEEP_DESC.csv] --out CONSTANT.json
//                    [--benchmark NAME ...] [--ci-method covariance|bootstrap]
//                    [--confidence-level 0.95] [--bootstrap-samples N] [--bootstrap-seed N]
//                    [--min-frequencies 3]
// SWEEP.csv: benchmark,f_core_mhz,power_w (or wattcal-ingest's KERNELS.csv); see
// pipeline/io/sweep.h.
#include "commands.h"

#include <iostream>

#include "usecases/constant_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddConstantOptions(CLI::App* app, ConstantStageOptions* o) {
  app->add_option("--sweep", o->sweep_path,
                  "Sweep CSV: benchmark,f_core_mhz,power_w (or wattcal-ingest's kernels CSV)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--description", o->description_path,
                  "Sweep description CSV: kernel -> benchmark, category, active_sms, "
                  "lanes_per_warp, f_core_mhz (e.g. wattcal-synth's sweep.csv)")
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_path, "Result to write (JSON)")->check(OutputFile())->required();
  app->add_option("--benchmark", o->fit.benchmarks, "Fit only these benchmarks (repeatable)");
  app->add_option("--ci-method", o->ci_method,
                  "Interval of P_const: covariance (Student t on the joint fit) or bootstrap "
                  "(over curves)")
      ->capture_default_str();
  app->add_option("--confidence-level", o->fit.confidence_level,
                  "Two-sided confidence level of the P_const interval, in (0, 1)")
      ->capture_default_str();
  app->add_option("--bootstrap-samples", o->fit.bootstrap_samples,
                  "Number of bootstrap resamples (--ci-method bootstrap)")
      ->capture_default_str();
  app->add_option("--bootstrap-seed", o->fit.bootstrap_seed,
                  "Seed of the bootstrap's draws (same seed, same interval)")
      ->capture_default_str();
  app->add_option("--min-frequencies", o->fit.min_frequencies,
                  "Distinct core clocks a curve needs to join the fit")
      ->capture_default_str();
}

int ConstantCommand(int argc, char** argv) {
  CLI::App app{"Fit constant power P_const over DVFS sweeps (AccelWattch Eq. 3, joint fit)",
               "wattcal-constant"};
  ConstantStageOptions o;
  AddConstantOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const ConstantStageReport r = RunConstantStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
