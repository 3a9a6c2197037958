#include "usecases/constant_stage.h"

#include <fmt/format.h>

#include "io/sweep.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

void ConstantStageOptions::Check() const {
  if (sweep_path.empty()) throw OptionError("--sweep is required");
  if (out_path.empty()) throw OptionError("--out is required");
  ConstantCiMethod method;
  if (!ParseConstantCiMethod(ci_method, &method)) {
    throw OptionError("--ci-method: '" + ci_method + "' is not covariance or bootstrap");
  }
  std::string error;
  if (!fit.Check(&error)) throw OptionError(error);
}

ConstantStageReport RunConstantStage(const ConstantStageOptions& o) {
  o.Check();
  ConstantPowerOptions options = o.fit;
  ParseConstantCiMethod(o.ci_method, &options.ci_method);
  const Sweep sweep = ReadSweep(o.sweep_path, o.description_path);
  ConstantStageReport report;
  report.result = FitConstantPower(sweep, options);
  const ConstantPowerReport& result = report.result;

  OutputSet outputs;
  std::vector<std::string> inputs = {o.sweep_path};
  if (!o.description_path.empty()) inputs.push_back(o.description_path);
  outputs.StageText(o.out_path, DumpJson(ConstantPowerToJson(result, sweep, options)));
  outputs.StageProvenance(o.out_path, "constant", inputs, nlohmann::json(options));
  outputs.Commit();
  report.written = outputs.Outputs();
  LogInfo(fmt::format(
      "P_const = {:.2f} W, {:.0f}% interval [{:.2f}, {:.2f}] W ({}), from {} "
      "curves ({} points), r = {:.4f}; the linear extrapolation is negative "
      "for {} of {} curves",
      result.p_const_w, 100.0 * options.confidence_level, result.p_const_ci_low_w,
      result.p_const_ci_high_w, ConstantCiMethodName(options.ci_method), result.curves.size(),
      result.points, result.pearson_r, result.negative_linear_curves, result.curves.size()));
  if (!result.excluded.empty()) {
    LogWarning(fmt::format("{} curves with too few core clocks left out (listed in {})",
                           result.excluded.size(), o.out_path));
  }
  LogInfo("wrote " + o.out_path);
  report.exit_code = static_cast<int>(kExitOk);
  return report;
}

}  // namespace wattcal
