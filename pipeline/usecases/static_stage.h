// wattcal-static as one library call: lane x SM sweeps -> power-gating terms and, per
// instruction-mix category, the linear (AccelWattch Eq. 4) and half-warp (AccelWattch Eq. 5)
// static power models with the better one chosen (AccelWattch §4.3-4.5).
#pragma once

#include <string>

#include "accelwattch/static_power.h"
#include "usecases/sweep_flags.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct StaticStageOptions {
  // --sweep, --description, --constant or --p-const-w, --out.
  SweepWithConstantFlags files;
  // --reference-f-core-mhz, --f-tolerance-mhz, --num-sms, --gating-benchmark, --warp-size,
  // --half-warp-lanes, --min-frequencies. Its p_const_w is set by Run from `files`.
  StaticPowerOptions fit;

  // OptionError naming the flag: the files' rules (SweepWithConstantFlags::Check), then the fit
  // options' ranges (with --p-const-w when given).
  void Check() const;
};

// exit_code: 0, or 3 (kExitFit) when neither gating terms nor any divergence model could be fitted (the result is written either way).
struct StaticStageReport : StageSummary {
  StaticPowerReport result;
};

StaticStageReport RunStaticStage(const StaticStageOptions& options);

}  // namespace wattcal
