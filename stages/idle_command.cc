// wattcal-idle: active-SM sweeps -> power per idle SM (AccelWattch Eqs. 6-8, geometric mean
// over microbenchmarks).
//
//   wattcal-idle --sweep SWEEP.csv [--description SWEEP_DESC.csv]
//                (--constant CONSTANT.json | --p-const-w W) --out IDLE.json
//                [--f-core-mhz F] [--num-sms N] [--lanes-per-warp 32] [--benchmark NAME ...]
#include "commands.h"

#include <iostream>

#include "usecases/idle_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddIdleOptions(CLI::App* app, IdleStageOptions* o) {
  AddSweepWithConstantOptions(app, &o->files);
  app->add_option("--f-core-mhz", o->fit.f_core_mhz, "Core clock of the rows used (0: the highest)")
      ->capture_default_str();
  app->add_option("--f-tolerance-mhz", o->fit.f_tolerance_mhz,
                  "Rows within this many MHz of --f-core-mhz count as at it")
      ->capture_default_str();
  app->add_option("--num-sms", o->fit.num_sms, "SMs on the GPU (0: the most in the sweep)")
      ->capture_default_str();
  app->add_option("--lanes-per-warp", o->fit.lanes_per_warp, "Lanes per warp of the rows used")
      ->capture_default_str();
  app->add_option("--benchmark", o->fit.benchmarks, "Only these benchmarks (repeatable)");
}

int IdleCommand(int argc, char** argv) {
  CLI::App app{"Power per idle SM (AccelWattch Eqs. 6-8)", "wattcal-idle"};
  IdleStageOptions o;
  AddIdleOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const IdleStageReport r = RunIdleStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
