// wattcal-constant as one library call: DVFS sweeps of microbenchmarks -> constant power P_const
// (AccelWattch Eq. 3, one P_const shared by every curve) with its confidence interval, written as
// JSON with a manifest beside it.
#pragma once

#include <string>

#include "accelwattch/constant_power.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct ConstantStageOptions {
  // --sweep: benchmark,f_core_mhz,power_w (or wattcal-ingest's kernels CSV); required.
  std::string sweep_path;
  // --description: kernel -> benchmark, category, active_sms, lanes_per_warp, f_core_mhz.
  std::string description_path;
  // --out: the result (JSON); required.
  std::string out_path;
  // --ci-method: "covariance" or "bootstrap" (parsed into fit.ci_method by Run).
  std::string ci_method = "covariance";
  // --benchmark, --confidence-level, --bootstrap-samples, --bootstrap-seed, --min-frequencies.
  ConstantPowerOptions fit;

  // OptionError naming the flag: --sweep or --out missing, an unknown --ci-method, or a fit
  // option out of range (ConstantPowerOptions::Check).
  void Check() const;
};

struct ConstantStageReport : StageSummary {
  ConstantPowerReport result;
};

// Checks the options, reads the sweep, fits, writes out_path and its manifest, logs P_const.
ConstantStageReport RunConstantStage(const ConstantStageOptions& options);

}  // namespace wattcal
