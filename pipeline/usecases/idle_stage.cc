#include "usecases/idle_stage.h"

#include <fmt/format.h>

#include "io/sweep.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

void IdleStageOptions::Check() const {
  files.Check();
  if (!files.p_const_w.has_value()) return;  // checked with --constant's value by Run
  IdlePowerOptions options = fit;
  options.p_const_w = *files.p_const_w;
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
}

IdleStageReport RunIdleStage(const IdleStageOptions& o) {
  o.Check();
  IdlePowerOptions options = o.fit;
  options.p_const_w = ResolveConstantPower(o.files);
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const Sweep sweep = ReadSweep(o.files.sweep_path, o.files.description_path);
  IdleStageReport report;
  report.result = FitIdlePower(sweep, options);
  const IdlePowerReport& result = report.result;
  const std::string& out_path = o.files.out_path;

  OutputSet outputs;
  outputs.StageText(out_path, DumpJson(IdlePowerToJson(result, sweep, options)));
  outputs.StageProvenance(out_path, "idle", SweepWithConstantInputs(o.files),
                          nlohmann::json(options));
  outputs.Commit();
  report.written = outputs.Outputs();
  LogInfo("wrote " + out_path);
  if (result.status != "ok") {
    LogWarning(result.status + " (recorded in " + out_path + ")");
    report.exit_code = static_cast<int>(kExitFit);
    return report;
  }
  LogInfo(fmt::format("P_idleSM = {:.4f} W (geometric mean over {} benchmarks at {} MHz)",
                      result.per_idle_sm_w, result.benchmarks_used, result.f_core_mhz));
  report.exit_code = static_cast<int>(kExitOk);
  return report;
}

}  // namespace wattcal
