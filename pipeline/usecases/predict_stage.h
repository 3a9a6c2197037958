// wattcal-predict as one library call: a calibrated model + activity -> predicted power (TPDS
// §3.5, §4.5), or AccelWattch's Eq. 12 / AccelWattch Eq. 13 for a wattcal-accelwattch-model.
// The model file's format decides which. The main (stages/predict_main.cc) binds the command
// line to PredictStageOptions and calls RunPredictStage; tests call it in-process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/activity_prediction.h"
#include "model/power_model.h"
#include "usecases/stage_summary.h"
#include "validate/prediction.h"

namespace wattcal {

struct PredictStageOptions {
  // --model: wattcal JSON, gpmTOOL model file, or wattcal-accelwattch-model JSON; required.
  std::string model_path;
  // --activity: gpmTOOL prediction/real file or tidy CSV; for an AccelWattch model an activity
  // table or a component table; required unless --capture is given.
  std::string activity_path;
  // --capture: capture directories of applications (wattcal-capture --app: windows.csv and
  // ncu/<workload>.csv, or ncu_raw.csv), with or without a power log; one row per workload.
  std::vector<std::string> captures;
  // --gpu: the GPU description (microbench_specs/gpus/*.json) that turns the captures'
  // counters into utilisations; required with --capture.
  std::string gpu_path;
  // --breakdown-out: with --capture, each workload's watts per term and component.
  std::string breakdown_out_path;
  // --allow-other-gpu: with --capture, predict although the model or the description is of
  // another GPU than the one the capture was recorded on (refused by default); every row is then
  // flagged other_gpu.
  bool allow_other_gpu = false;
  // With --capture, the what-ifs (perf/what_if.h): --at-clock MHZ,... and --at-power-limit W,...
  // per workload, written to --what-if-out; --max-slowdown-pct marks the least energy within a
  // slowdown; --vf-curve a wattcal-clocks vf_model.json instead of the model's own curve;
  // --crisp-counters CRISP counters per workload (kernel = workload) for the run times.
  std::vector<double> at_clock_mhz;
  std::vector<double> at_power_limit_w;
  std::string what_if_out_path;
  double max_slowdown_pct = -1.0;  // < 0: not given
  std::string vf_curve_path;
  std::string crisp_counters_path;
  // --out: predictions CSV; required.
  std::string out_path;
  // --mode dvfs | fixed (dvfs and fixed models only).
  PredictMode mode = PredictMode::kDvfs;
  // Whether --mode was given (an AccelWattch model refuses it).
  bool mode_given = false;
  // --breakdown: per-component power columns (TPDS §4.5).
  bool breakdown = false;
  // --power-limit-w: the board's power limit, W (unset: the activity's, else the model's;
  // ResolvePowerLimitW).
  std::optional<double> power_limit_w;
  // --default-core-mhz, --default-mem-mhz: tidy inputs' default pair, MHz (0 = infer).
  double default_core_mhz = 0.0;
  double default_mem_mhz = 0.0;
  // --f-core-mhz, --f-mem-mhz, --active-sms, --lanes-per-warp: AccelWattch what-ifs.
  std::vector<double> f_core_mhz;
  std::vector<double> f_mem_mhz;
  std::vector<int> active_sms;
  std::vector<int> lanes_per_warp;

  // The rules that do not depend on the files (required paths, --mode's values, the default
  // pair and the power limit's ranges). Throws OptionError naming the flag.
  void Check() const;
};

struct PredictStageReport : StageSummary {
  // The predictions written.
  size_t rows = 0;
  // With --capture: the workloads measured too (a power log was present), and their MAPE (%).
  size_t measured = 0;
  double measured_mape_pct = 0.0;
};

// Runs wattcal-predict. The rules that depend on the model's format (AccelWattch models take
// no --mode / --default-*-mhz / --power-limit-w; the what-if flags need an AccelWattch model
// and an activity table) are checked after reading it: OptionError.
PredictStageReport RunPredictStage(const PredictStageOptions& options);

// The predict-an-activity use case in memory (wattcal-predict --activity; the Python module calls
// it on a DataFrame's rows): every row of `activity` predicted (TPDS Eq. 9 when `fixed`, else
// TPDS Eqs. 4-6 at each row's pair), capped at the board's limit (ResolvePowerLimitW: `power_limit_w`,
// else the activity's, else the model's), with the warnings the command logs (a limit below idle,
// rows beyond the training range, rows at a clock outside the model's levels).
std::vector<ActivityPrediction> PredictActivityRows(const PowerModel& model, const Corpus& activity,
                                                    bool fixed,
                                                    std::optional<double> power_limit_w);

}  // namespace wattcal
