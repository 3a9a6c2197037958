// wattcal-constant: DVFS sweeps of microbenchmarks -> constant power P_const (AccelWattch Eq. 3,
// one P_const shared by every curve) with its confidence interval, each curve's fit, and the
// GPUWattch-style linear extrapolation beside it.
//
//   wattcal-constant --sweep SWEEP.csv [--description SWEEP_DESC.csv] --out CONSTANT.json
//                    [--benchmark NAME ...] [--ci-method covariance|bootstrap]
//                    [--confidence-level 0.95] [--bootstrap-samples N] [--bootstrap-seed N]
//                    [--min-frequencies 3]
// SWEEP.csv: benchmark,f_core_mhz,power_w (or wattcal-ingest's KERNELS.csv); see
// pipeline/accelwattch/sweep.h.
#include <fmt/format.h>

#include "accelwattch/constant_power.h"
#include "accelwattch/sweep.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Fit constant power P_const over DVFS sweeps (AccelWattch Eq. 3, joint fit)",
               "wattcal-constant"};
  std::string sweep_path, description_path, out_path, ci_method = "covariance";
  ConstantPowerOptions options;
  app.add_option("--sweep", sweep_path,
                 "Sweep CSV: benchmark,f_core_mhz,power_w (or wattcal-ingest's kernels CSV)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--description", description_path,
                 "Sweep description CSV: kernel -> benchmark, category, active_sms, "
                 "lanes_per_warp, f_core_mhz (e.g. wattcal-synth's sweep.csv)")
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_path, "Result to write (JSON)")->check(OutputFile())->required();
  app.add_option("--benchmark", options.benchmarks, "Fit only these benchmarks (repeatable)");
  app.add_option("--ci-method", ci_method,
                 "Interval of P_const: covariance (Student t on the joint fit) or bootstrap "
                 "(over curves)")
      ->capture_default_str();
  app.add_option("--confidence-level", options.confidence_level, "Confidence level of the interval")
      ->capture_default_str();
  app.add_option("--bootstrap-samples", options.bootstrap_samples, "Bootstrap resamples")
      ->capture_default_str();
  app.add_option("--bootstrap-seed", options.bootstrap_seed, "Bootstrap seed")->capture_default_str();
  app.add_option("--min-frequencies", options.min_frequencies,
                 "Distinct core clocks a curve needs to join the fit")
      ->capture_default_str();
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    if (!ParseConstantCiMethod(ci_method, &options.ci_method)) {
      throw OptionError("--ci-method: '" + ci_method + "' is not covariance or bootstrap");
    }
    std::string error;
    if (!options.Check(&error)) throw OptionError(error);
    const Sweep sweep = ReadSweep(sweep_path, description_path);
    const ConstantPowerResult result = FitConstantPower(sweep, options);

    OutputSet outputs;
    std::vector<std::string> inputs = {sweep_path};
    if (!description_path.empty()) inputs.push_back(description_path);
    outputs.StageText(out_path, DumpJson(ConstantPowerToJson(result, sweep, options)));
    outputs.StageManifest(out_path, "constant", inputs, ConstantPowerOptionsToJson(options));
    outputs.Commit();
    LogInfo(fmt::format("P_const = {:.2f} W, {:.0f}% interval [{:.2f}, {:.2f}] W ({}), from {} "
                        "curves ({} points), r = {:.4f}; the linear extrapolation is negative "
                        "for {} of {} curves",
                        result.p_const_w, 100.0 * options.confidence_level,
                        result.p_const_ci_low_w, result.p_const_ci_high_w,
                        ConstantCiMethodName(options.ci_method), result.curves.size(),
                        result.points, result.pearson_r, result.negative_linear_curves,
                        result.curves.size()));
    if (!result.excluded.empty()) {
      LogWarning(fmt::format("{} curves with too few core clocks left out (listed in {})",
                             result.excluded.size(), out_path));
    }
    LogInfo("wrote " + out_path);
    return static_cast<int>(kExitOk);
  });
}
