// wattcal-static: lane x SM sweeps -> power-gating terms (first SM vs each further SM, first
// lane vs each further lane) and, per instruction-mix category, the linear (AccelWattch Eq. 4) and
// half-warp (AccelWattch Eq. 5) static power models with the better one chosen
// (AccelWattch §4.3-4.5).
//
//   wattcal-static --sweep SWEEP.csv [--description SWEEP_DESC.csv]
//                  (--constant CONSTANT.json | --p-const-w W) --out STATIC.json
//                  [--reference-f-core-mhz F] [--num-sms N] [--gating-benchmark NAME]
//                  [--warp-size 32] [--half-warp-lanes 16] [--min-frequencies 3]
#include "commands.h"

#include <iostream>

#include "usecases/static_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddStaticOptions(CLI::App* app, StaticStageOptions* o) {
  AddSweepWithConstantOptions(app, &o->files);
  app->add_option("--reference-f-core-mhz", o->fit.reference_f_core_mhz,
                  "Clock of the static power and gating terms, MHz (0: the highest)")
      ->capture_default_str();
  app->add_option("--f-tolerance-mhz", o->fit.f_tolerance_mhz,
                  "Rows within this many MHz of the reference clock count as at it")
      ->capture_default_str();
  app->add_option("--num-sms", o->fit.num_sms, "SMs on the GPU (0: the most in the sweep)")
      ->capture_default_str();
  app->add_option("--gating-benchmark", o->fit.gating_benchmark,
                  "Benchmark of the gating sweeps (default: most SM counts at one lane)");
  app->add_option("--warp-size", o->fit.warp_size, "Lanes per warp of the GPU")
      ->capture_default_str();
  app->add_option("--half-warp-lanes", o->fit.half_warp_lanes, "Lanes per half-warp (Eq. 5)")
      ->capture_default_str();
  app->add_option("--min-frequencies", o->fit.min_frequencies,
                  "Distinct core clocks a divergence curve needs")
      ->capture_default_str();
}

int StaticCommand(int argc, char** argv) {
  CLI::App app{"Power-gating and divergence-aware static power (AccelWattch §4.3-4.5)",
               "wattcal-static"};
  StaticStageOptions o;
  AddStaticOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const StaticStageReport r = RunStaticStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
