// The report of an activity-free DVFS run (wattcal-clocks): index.html and index.md (one
// report/document.h document) with the figures a reader looks at first:
//
//   figures/vf_curve            the estimated voltage against the clock (each CV fold's curve
//                               beside it; the measured supply voltage when given);
//   figures/power_vs_clock      measured power and the CV prediction from the anchor clock, for
//                               up to nine workloads from the best to the worst predicted;
//   figures/cv_error_by_clock   the CV error at each clock, the model beside P proportional to f;
//   figures/energy_error_by_clock  the energy error at each clock predicted from the anchor,
//                               run time through the two timed clocks and from the anchor alone,
//                               beside the power's (with run times);
//   figures/energy_vs_clock     measured and predicted energy (both run times), the chosen clock
//                               and the true optimum (with run times);
//   figures/idle_constant       the idle curve with both constant-power fits (with an idle curve).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "clocks/clock_cv.h"
#include "clocks/idle_constant.h"
#include "clocks/vf_fit.h"
#include "io/clock_runs.h"
#include "io/measured_voltage.h"
#include "util/output.h"

namespace wattcal {

struct ClocksReportInput {
  std::string title;
  std::string out_dir;  // where index.html goes; links are relative to it
  const ClockRunTable* table = nullptr;
  const VfFitResult* fit = nullptr;
  const ClockCvResult* cv = nullptr;
  const IdleConstantFit* idle = nullptr;                           // optional
  const IdleCurve* idle_curve = nullptr;                           // with idle
  const std::vector<VoltageReading>* measured_voltages = nullptr;  // optional
  std::string measured_voltage_path;
  // The run's other outputs, linked from the report: (what it is, path).
  std::vector<std::pair<std::string, std::string>> files;
  bool figures = true;
};

// Draws the figures into `outputs` (out_dir/figures/NAME.{png,svg}) and stages index.html and
// index.md; returns their final paths, figures first.
std::vector<std::string> StageClocksReport(const ClocksReportInput& input, OutputSet* outputs);

// Workload names without the suffix (from an '_' on) that every one of them shares: the panel
// titles of a data set named like "<model>_<precision>_b8_s128_modeprefill_attneager".
std::vector<std::string> ShortWorkloadNames(const std::vector<std::string>& names);

}  // namespace wattcal
