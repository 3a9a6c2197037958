// wattcal-static: lane x SM sweeps -> power-gating terms (first SM vs each further SM, first
// lane vs each further lane) and, per instruction-mix category, the linear (AccelWattch Eq. 4) and
// half-warp (AccelWattch Eq. 5) static power models with the better one chosen
// (AccelWattch §4.3-4.5).
//
//   wattcal-static --sweep SWEEP.csv [--description SWEEP_DESC.csv]
//                  (--constant CONSTANT.json | --p-const-w W) --out STATIC.json
//                  [--reference-f-core-mhz F] [--num-sms N] [--gating-benchmark NAME]
//                  [--warp-size 32] [--half-warp-lanes 16] [--min-frequencies 3]
#include <fmt/format.h>

#include <algorithm>

#include "accelwattch/static_power.h"
#include "accelwattch/sweep.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Power-gating and divergence-aware static power (AccelWattch §4.3-4.5)",
               "wattcal-static"};
  SweepWithConstantFlags files;
  StaticPowerOptions options;
  AddSweepWithConstantOptions(&app, &files, &options.p_const_w);
  app.add_option("--reference-f-core-mhz", options.reference_f_core_mhz,
                 "Clock of the static power and gating terms, MHz (0: the highest)")
      ->capture_default_str();
  app.add_option("--f-tolerance-mhz", options.f_tolerance_mhz, "Rows this close count as at it")
      ->capture_default_str();
  app.add_option("--num-sms", options.num_sms, "SMs on the GPU (0: the most in the sweep)")
      ->capture_default_str();
  app.add_option("--gating-benchmark", options.gating_benchmark,
                 "Benchmark of the gating sweeps (default: most SM counts at one lane)");
  app.add_option("--warp-size", options.warp_size, "Lanes per warp")->capture_default_str();
  app.add_option("--half-warp-lanes", options.half_warp_lanes, "Lanes per half-warp (Eq. 5)")
      ->capture_default_str();
  app.add_option("--min-frequencies", options.min_frequencies,
                 "Distinct core clocks a divergence curve needs")
      ->capture_default_str();
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    ResolveConstantPower(files, &options.p_const_w);
    std::string error;
    if (!options.Check(&error)) throw OptionError(error);
    const Sweep sweep = ReadSweep(files.sweep_path, files.description_path);
    const StaticPowerResult result = FitStaticPower(sweep, options);
    const std::string& out_path = files.out_path;

    OutputSet outputs;
    const std::vector<std::string> inputs = SweepWithConstantInputs(files);
    outputs.StageText(out_path, DumpJson(StaticPowerToJson(result, sweep, options)));
    outputs.StageManifest(out_path, "static", inputs, StaticPowerOptionsToJson(options));
    outputs.Commit();
    const GatingTerms& g = result.gating;
    LogInfo(fmt::format("gating ({}): first SM {:.3f} W = {:.1f}x each further SM; first lane "
                        "{:.4f} W per SM = {:.1f}x each further lane [{}]",
                        g.benchmark, g.first_sm_w, g.first_to_add_sm_ratio, g.first_lane_per_sm_w,
                        g.first_to_add_lane_ratio, g.status));
    int models = 0;
    for (const CategoryStatic& c : result.categories) {
      if (c.status != "ok") continue;
      ++models;
      LogInfo(fmt::format("{}: {} (RMSE linear {:.3f} W, half-warp {:.3f} W)", c.category,
                          c.chosen_model, c.linear.rmse_w, c.half_warp.rmse_w));
    }
    LogInfo("wrote " + out_path);
    if (g.status != "ok" && models == 0) {
      LogWarning("neither gating terms nor any divergence model could be fitted (see " + out_path + ")");
      return static_cast<int>(kExitFit);
    }
    return static_cast<int>(kExitOk);
  });
}
