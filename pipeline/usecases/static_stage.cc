#include "usecases/static_stage.h"

#include <fmt/format.h>

#include "io/sweep.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

void StaticStageOptions::Check() const {
  files.Check();
  if (!files.p_const_w.has_value()) return;  // checked with --constant's value by Run
  StaticPowerOptions options = fit;
  options.p_const_w = *files.p_const_w;
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
}

StaticStageReport RunStaticStage(const StaticStageOptions& o) {
  o.Check();
  StaticPowerOptions options = o.fit;
  options.p_const_w = ResolveConstantPower(o.files);
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const Sweep sweep = ReadSweep(o.files.sweep_path, o.files.description_path);
  StaticStageReport report;
  report.result = FitStaticPower(sweep, options);
  const StaticPowerReport& result = report.result;
  const std::string& out_path = o.files.out_path;

  OutputSet outputs;
  outputs.StageText(out_path, DumpJson(StaticPowerToJson(result, sweep, options)));
  outputs.StageProvenance(out_path, "static", SweepWithConstantInputs(o.files),
                          nlohmann::json(options));
  outputs.Commit();
  report.written = outputs.Outputs();
  const GatingTerms& g = result.gating;
  LogInfo(
      fmt::format("gating ({}): first SM {:.3f} W = {:.1f}x each further SM; first lane "
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
    LogWarning("neither gating terms nor any divergence model could be fitted (see " + out_path +
               ")");
    report.exit_code = static_cast<int>(kExitFit);
    return report;
  }
  report.exit_code = static_cast<int>(kExitOk);
  return report;
}

}  // namespace wattcal
