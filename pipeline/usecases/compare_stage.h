// wattcal-compare as one library call: relative-architecture comparison (AccelWattch MICRO'21
// §7.1, Fig. 12): per workload, the power of GPU B relative to GPU A, (P_B - P_A) / P_A,
// estimated vs. measured. The main (stages/compare_main.cc) binds the command line to
// CompareStageOptions and calls RunCompareStage; tests call it in-process.
#pragma once

#include <string>
#include <vector>

#include "compare/relative_power.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct CompareStageOptions {
  // --measured: both GPUs' measured power, one <arch>_W column per GPU.
  std::string measured_path;
  // --measured-a, --measured-b: each GPU's measured power (instead of --measured).
  std::string measured_a_path;
  std::string measured_b_path;
  // --arch-a (the denominator), --arch-b; required.
  std::string arch_a;
  std::string arch_b;
  // --estimated-a, --estimated-b; required.
  std::string estimated_a_path;
  std::string estimated_b_path;
  // --estimated-column (default: sim_total_W, else power_w, else power_mw).
  std::string estimated_column;
  // --measured-column (default: the GPU's name).
  std::string measured_column;
  // --out: the comparison (JSON); required. --table: the per-workload table (CSV).
  std::string out_path;
  std::string table_path;
  // --direction-deadband-pct: |relative change| within this many percent is "no change".
  double direction_deadband_pct = 0.0;
  // --max-diff-pp: exit 3 when |difference of the averages| exceeds this (0 = no threshold).
  double max_diff_pp = 0.0;

  // The measured files each GPU is read from: --measured-a/-b, else --measured.
  std::string MeasuredAPath() const;
  std::string MeasuredBPath() const;
  // Every rule between the options, and their conversion to the library's (the deadband as a
  // fraction), once; throws OptionError naming the flag.
  CompareOptions Check() const;
};

// exit_code: 0, or 3 (kExitFit) when the difference of the averages exceeds max_diff_pp.
struct CompareStageReport : StageSummary {
  // The difference of the averages, percentage points.
  double diff_of_means_pp = 0.0;
};

CompareStageReport RunCompareStage(const CompareStageOptions& options);

}  // namespace wattcal
