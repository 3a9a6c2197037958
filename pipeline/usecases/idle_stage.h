// wattcal-idle as one library call: active-SM sweeps -> power per idle SM
// (AccelWattch Eqs. 6-8, geometric mean over microbenchmarks).
#pragma once

#include <string>

#include "accelwattch/idle_power.h"
#include "usecases/sweep_flags.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct IdleStageOptions {
  // --sweep, --description, --constant or --p-const-w, --out.
  SweepWithConstantFlags files;
  // --f-core-mhz, --f-tolerance-mhz, --num-sms, --lanes-per-warp, --benchmark. Its p_const_w
  // is set by Run from `files`.
  IdlePowerOptions fit;

  // OptionError naming the flag: the files' rules (SweepWithConstantFlags::Check), then the fit
  // options' ranges (with --p-const-w when given).
  void Check() const;
};

// exit_code: 0, or 3 (kExitFit) when P_idleSM could not be fitted (the result is written either way).
struct IdleStageReport : StageSummary {
  IdlePowerReport result;
};

IdleStageReport RunIdleStage(const IdleStageOptions& options);

}  // namespace wattcal
