// wattcal-idle: active-SM sweeps -> power per idle SM (AccelWattch Eqs. 6-8, geometric mean
// over microbenchmarks).
//
//   wattcal-idle --sweep SWEEP.csv [--description SWEEP_DESC.csv]
//                (--constant CONSTANT.json | --p-const-w W) --out IDLE.json
//                [--f-core-mhz F] [--num-sms N] [--lanes-per-warp 32] [--benchmark NAME ...]
#include <fmt/format.h>

#include "accelwattch/idle_power.h"
#include "accelwattch/sweep.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Power per idle SM (AccelWattch Eqs. 6-8)", "wattcal-idle"};
  SweepWithConstantFlags files;
  IdlePowerOptions options;
  AddSweepWithConstantOptions(&app, &files, &options.p_const_w);
  app.add_option("--f-core-mhz", options.f_core_mhz, "Core clock of the rows used (0: the highest)")
      ->capture_default_str();
  app.add_option("--f-tolerance-mhz", options.f_tolerance_mhz, "Rows this close count as at it")
      ->capture_default_str();
  app.add_option("--num-sms", options.num_sms, "SMs on the GPU (0: the most in the sweep)")
      ->capture_default_str();
  app.add_option("--lanes-per-warp", options.lanes_per_warp, "Lanes of the rows used")
      ->capture_default_str();
  app.add_option("--benchmark", options.benchmarks, "Only these benchmarks (repeatable)");
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    ResolveConstantPower(files, &options.p_const_w);
    std::string error;
    if (!options.Check(&error)) throw OptionError(error);
    const Sweep sweep = ReadSweep(files.sweep_path, files.description_path);
    const IdlePowerResult result = FitIdlePower(sweep, options);
    const std::string& out_path = files.out_path;

    OutputSet outputs;
    const std::vector<std::string> inputs = SweepWithConstantInputs(files);
    outputs.StageText(out_path, DumpJson(IdlePowerToJson(result, sweep, options)));
    outputs.StageManifest(out_path, "idle", inputs, IdlePowerOptionsToJson(options));
    outputs.Commit();
    LogInfo("wrote " + out_path);
    if (result.status != "ok") {
      LogWarning(result.status + " (recorded in " + out_path + ")");
      return static_cast<int>(kExitFit);
    }
    LogInfo(fmt::format("P_idleSM = {:.4f} W (geometric mean over {} benchmarks at {} MHz)",
                        result.per_idle_sm_w, result.benchmarks_used, result.f_core_mhz));
    return static_cast<int>(kExitOk);
  });
}
