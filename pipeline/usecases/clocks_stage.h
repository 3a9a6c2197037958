// wattcal-clocks as one library call: power (and run time) per workload at locked core clocks,
// no counters -> the voltage-frequency curve (TPDS'19 Eqs. 4-6 with one activity per workload),
// power at every clock from one clock, the energy-optimal clock, the constant power from an idle
// curve, each judged by cross-validation by workload; with the report. All outputs are committed
// together or not at all, with one provenance record.
//
// out_dir receives: vf_model.json, voltages.csv (f_core_mhz,v_rel), training_fit.csv,
// cv_predictions.csv (workload,f_core_mhz,measured_w,predicted_w,...), clock_choice.csv (with
// --time-clocks), energy_at_clocks.csv (with --time-clocks: energy per run at every clock from
// the anchor), idle_constant.json (with --idle), predictions.csv (with --predict),
// clocks_summary.json, index.html, index.md, figures/ and provenance/.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clocks/clock_cv.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct ClocksStageOptions {
  std::vector<std::string> runs_paths;  // --runs (required, repeatable)
  std::string out_dir;                  // --out-dir (required)
  std::string title;                    // --title ("" = the folder's name)
  std::string idle_path;                // --idle
  std::string measured_voltage_path;    // --measured-voltage
  std::string predict_path;             // --predict: new workloads measured at one clock
  bool figures = true;                  // --no-figures clears it
  ClockCvOptions cv;  // --anchor-mhz, --time-clocks, --folds, --seed, --reference-mhz,
                      // --power-limit-w, --voltage-min, --voltage-max, --fit-residuals

  // OptionError naming the flag.
  void Check() const;
};

// The effective options, for manifests.
void to_json(nlohmann::json& j, const ClocksStageOptions& options);

// summary: the headline figures, one per line (printed to stdout).
struct ClocksStageReport : StageSummary {
  ClockCvResult cv;
  double training_mape_pct = 0.0;
};

ClocksStageReport RunClocksStage(const ClocksStageOptions& options);

// The use case in memory: the V-F model fitted to the runs and its cross-validation by workload
// (with the clock choice when options name --time-clocks); warnings and notes are logged.
struct ClocksCalibration {
  VfFitResult fit;
  ClockCvResult cv;
};
ClocksCalibration CalibrateClocks(const ClockRunTable& table, const ClockCvOptions& options);

}  // namespace wattcal
